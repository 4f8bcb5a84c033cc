//go:build unix

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/testbin"
)

// waitExit's rules, with channels standing in for the command and the
// signals.
func TestWaitExit(t *testing.T) {
	const grace = 100 * time.Millisecond
	type step struct {
		after time.Duration
		code  int       // the command ends with code (when sig is nil)
		sig   os.Signal // or this signal arrives
	}
	cases := []struct {
		name      string
		steps     []step
		want      int
		atMost    time.Duration
		cancelled bool
	}{
		{"ends by itself", []step{{0, 3, nil}}, 3, grace, false},
		{"SIGTERM, then a clean end", []step{{0, 0, syscall.SIGTERM}, {10 * time.Millisecond, 0, nil}}, 0, grace, true},
		{"SIGINT, then a failed end", []step{{0, 0, syscall.SIGINT}, {10 * time.Millisecond, 1, nil}}, 130, grace, true},
		{"SIGTERM, command stuck", []step{{0, 0, syscall.SIGTERM}}, 143, 3 * grace, true},
		{"SIGTERM, then SIGINT", []step{{0, 0, syscall.SIGTERM}, {10 * time.Millisecond, 0, syscall.SIGINT}}, 130, grace / 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done, sigs := make(chan int, 1), make(chan os.Signal, 2)
			cancelled := make(chan struct{})
			go func() {
				for _, s := range c.steps {
					time.Sleep(s.after)
					if s.sig != nil {
						sigs <- s.sig
					} else {
						done <- s.code
					}
				}
			}()
			start := time.Now()
			got := waitExit(done, sigs, func() { close(cancelled) }, grace)
			took := time.Since(start)
			if got != c.want || took > c.atMost {
				t.Errorf("exit %d after %v, want %d within %v", got, took, c.want, c.atMost)
			}
			select {
			case <-cancelled:
				if !c.cancelled {
					t.Error("cancelled without a signal")
				}
			default:
				if c.cancelled {
					t.Error("the signal did not cancel the command")
				}
			}
		})
	}
}

// lineWaiter collects a child's stderr and signals when a line containing
// want has been written.
type lineWaiter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *lineWaiter) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.buf.String() }

// startEdgectl runs the real binary and waits until its stderr shows
// ready. stdin stays open (and empty) until the test ends.
func startEdgectl(t *testing.T, ready string, args ...string) (*exec.Cmd, *lineWaiter) {
	t.Helper()
	bin := testbin.Build(t, "github.com/edgectl/edgectl/cmd/edgectl", "edgectl")
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	errOut := &lineWaiter{want: ready, seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = io.Discard, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	select {
	case <-errOut.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("%v: no %q on stderr: %s", args, ready, errOut)
	}
	return cmd, errOut
}

// exitAfter sends sigs to the child, one after the other, and returns its
// exit code and how long after the first it took to exit.
func exitAfter(t *testing.T, cmd *exec.Cmd, sigs ...syscall.Signal) (int, time.Duration) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	start := time.Now()
	for _, s := range sigs {
		if err := cmd.Process.Signal(s); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), time.Since(start)
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10 s after %v", sigs)
		return 0, 0
	}
}

// SIGTERM and SIGINT end the real process within about a second even when
// the command does not look at its context: interactive `run` blocks
// reading stdin, which nothing cancels. The exit code says which signal
// (143, 130); a second signal ends it at once.
func TestSignalsEndTheProcess(t *testing.T) {
	for _, c := range []struct {
		name   string
		sigs   []syscall.Signal
		code   int
		within time.Duration
	}{
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, 143, 1500 * time.Millisecond},
		{"SIGINT", []syscall.Signal{syscall.SIGINT}, 130, 1500 * time.Millisecond},
		{"SIGTERM twice", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, 143, 600 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, errOut := startEdgectl(t, "loaded tinystories-656k", "run", runFixture)
			code, took := exitAfter(t, cmd, c.sigs...)
			t.Logf("exit %d %v after the signal; stderr: %s", code, took.Round(time.Millisecond), strings.TrimSpace(errOut.String()))
			if code != c.code || took > c.within {
				t.Errorf("exit %d after %v, want %d within %v", code, took, c.code, c.within)
			}
		})
	}
}

// A command that honours its context still ends cleanly: serve shuts down
// on SIGTERM and exits 0, promptly.
func TestServeStopsCleanlyOnSIGTERM(t *testing.T) {
	cmd, errOut := startEdgectl(t, "listening on", "serve", "--models", runFixture, "--addr", "127.0.0.1:0")
	code, took := exitAfter(t, cmd, syscall.SIGTERM)
	t.Logf("exit %d %v after the signal", code, took.Round(time.Millisecond))
	if code != 0 || took > 1500*time.Millisecond || !strings.Contains(errOut.String(), "stopped") {
		t.Errorf("exit %d after %v; stderr: %s", code, took, errOut)
	}
}
