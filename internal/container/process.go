package container

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is one run of a tool whose stdout and stderr are merged and read
// as log lines: a `RUNTIME run` command line (Run.Argv) or a native
// program.
type Process struct {
	Argv []string
	Env  []string // nil: this process's environment
	// Timeout bounds the run (0: none); past it Stream stops the process
	// and returns context.DeadlineExceeded.
	Timeout time.Duration
	// WaitDelay is how long, after the stop, Stream waits for the output
	// to close before it kills the process and returns (exec.Cmd's).
	WaitDelay time.Duration
	// Runtime and Name: Argv runs the container Name; a stop runs
	// `RUNTIME kill NAME` (killing the CLI alone would leave the container
	// running), then sends the CLI SIGTERM.
	Runtime, Name string
	// GroupSignal, for a native process (no Name): it runs in its own
	// process group and a stop sends this signal to the whole group, so a
	// tool's forked workers go with it. 0: a stop kills the process alone.
	GroupSignal syscall.Signal
}

// StartError is a program that did not start (not found, not executable).
type StartError struct {
	Program string
	Err     error
}

func (e *StartError) Error() string { return fmt.Sprintf("start %s: %v", e.Program, e.Err) }
func (e *StartError) Unwrap() error { return e.Err }

// killTimeout bounds `RUNTIME kill NAME`.
const killTimeout = 30 * time.Second

// Stream runs p, passes each line of its merged output to line (Lines'
// splitting), and waits for it. It returns a *StartError when the program
// did not start, ctx's error when ctx ended, context.DeadlineExceeded when
// p ran past its Timeout, else exec.Cmd.Wait's (an *exec.ExitError for a
// failed exit: see ExitCode).
func (p Process) Stream(ctx context.Context, line func(string)) error {
	rctx := ctx
	if p.Timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, p.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(rctx, p.Argv[0], p.Argv[1:]...)
	cmd.Env = p.Env
	switch {
	case p.Name != "":
		cmd.Cancel = func() error {
			kctx, kcancel := context.WithTimeout(context.Background(), killTimeout)
			defer kcancel()
			exec.CommandContext(kctx, p.Runtime, "kill", p.Name).Run()
			return cmd.Process.Signal(syscall.SIGTERM)
		}
	case p.GroupSignal != 0:
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, p.GroupSignal) }
	}
	cmd.WaitDelay = p.WaitDelay
	// One pipe for both streams keeps their lines in the order written;
	// an *os.File (not an io.Writer) lets Wait return without copying.
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return &StartError{Program: p.Argv[0], Err: err}
	}
	pw.Close()
	for lines := Lines(pr); lines.Scan(); {
		line(lines.Text())
	}
	pr.Close()
	err = cmd.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rctx.Err() != nil {
		return context.DeadlineExceeded
	}
	return err
}

// maxLine bounds one log line (a longer one ends the scan).
const maxLine = 4 << 20

// Lines reads r line by line, splitting on \n, \r\n and a bare \r, so the
// progress bars tools redraw with \r become lines of their own instead of
// one huge one.
func Lines(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	sc.Split(splitLines)
	return sc
}

func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		j := i + 1
		if data[i] == '\r' && j < len(data) && data[j] == '\n' {
			j++
		} else if data[i] == '\r' && j == len(data) && !atEOF {
			return 0, nil, nil // need more data to see whether \n follows
		}
		return j, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// ExitCode is a finished process's exit status, 128+N when signal N
// killed it (as a shell reports it; docker reports an OOM-killed container
// as 137). An error that is not an exit status is returned as it is.
func ExitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, err
	}
	if code := ee.ExitCode(); code >= 0 {
		return code, nil
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return -1, nil
}
