package rknnrt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/envconfig"
)

// Model is one running helper holding every shard of a chain on its core.
// Requests run one at a time: the NPU cores are the resource, and the
// helper answers frames in order.
type Model struct {
	dir   string
	opts  Options
	args  []string
	chain *chain
	info  engine.ModelInfo

	mu      sync.Mutex // one request at a time
	nextID  uint64
	runtime string // what the helper said runs the shards
	loadMS  []Timing

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	out    *os.File      // stdout's read end: ours, not cmd.Wait's, to close (closeOut)
	exited chan struct{} // closed once the helper is reaped
	tail   *tailLog

	dead    engine.FirstError // why the helper can take no more requests
	exitMu  sync.Mutex        // waitErr
	waitErr error

	closeOnce sync.Once
}

// Info describes the loaded chain.
func (m *Model) Info() engine.ModelInfo { return m.info }

// PID is the helper's process id (tests, logs).
func (m *Model) PID() int { return m.cmd.Process.Pid }

// Runtime is what the helper reported running the shards with.
func (m *Model) Runtime() string { return m.runtime }

// NewSession refuses: an encoder has no text to generate.
func (m *Model) NewSession() (engine.Session, error) {
	return nil, fmt.Errorf("%w: %s is an rknn encoder (patch embeddings in, hidden states out) and only encodes: send it to POST /v1/rknn/encode",
		engine.ErrInvalidRequest, m.info.Name)
}

// Alive returns nil while the helper can take requests, else why not;
// serve checks it after every request and before reusing an idle model,
// and loads the chain again (a new helper) when it fails.
func (m *Model) Alive() error {
	if err := m.dead.Err(); err != nil {
		return err
	}
	m.exitMu.Lock()
	defer m.exitMu.Unlock()
	select {
	case <-m.exited:
		return fmt.Errorf("%w (%v); its last output: %s", ErrExited, m.waitErr, m.tail.String())
	default:
		return nil
	}
}

// start runs the helper, sends the load frame and waits for ready.
func (m *Model) start(ctx context.Context) error {
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.Dir = m.dir
	cmd.Env = envconfig.ChildEnv(m.opts.Env...)
	cmd.SysProcAttr = procAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	// Our own pipe for stdout: cmd.StdoutPipe's read end is closed by
	// cmd.Wait as soon as the helper is reaped, which can come before the
	// reader has taken the error frame a failing helper wrote last. This
	// one reads to EOF, and stop closes it.
	out, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout = w
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	err = cmd.Start()
	w.Close() // the helper holds the write end now: its exit is our EOF
	if err != nil {
		out.Close()
		return fmt.Errorf("start the rknn helper %s: %w (install python3 with rknn-toolkit-lite2 on the board, or set EDGECTL_RKNN_PYTHON)", m.args[0], err)
	}
	m.cmd, m.stdin, m.out, m.stdout = cmd, stdin, out, bufio.NewReaderSize(out, 64<<10)
	m.exited, m.tail = make(chan struct{}), &tailLog{}
	logged := make(chan struct{})
	go func() { // the helper's stderr: logged, and kept for error messages
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 4096), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			m.tail.add(line)
			m.opts.Logf("rknn helper %d: %s", cmd.Process.Pid, clip(line, 300))
		}
	}()
	go func() {
		<-logged // Wait closes the pipe: read it to the end first
		err := cmd.Wait()
		m.exitMu.Lock()
		m.waitErr = err
		m.exitMu.Unlock()
		close(m.exited)
	}()

	load := Header{Op: OpLoad, Shards: m.chain.shards, Outputs: []string{m.chain.output.Name}}
	h, _, err := m.exchange(ctx, m.opts.StartTimeout, load, nil, 0)
	if err == nil && h.Op != OpReady {
		err = fmt.Errorf("the helper answered the load frame with %q, want ready", h.Op)
	}
	if err != nil {
		m.stop()
		return fmt.Errorf("load %s: %w", m.dir, err)
	}
	m.runtime, m.loadMS = h.Runtime, h.Timings
	return nil
}

// exchange sends one frame and reads the answer within timeout (and
// ctx). A helper that does not answer in time is killed: it may be stuck
// in the NPU driver, and its late answer would be taken for the next
// request's. An error frame comes back as a *HelperError.
func (m *Model) exchange(ctx context.Context, timeout time.Duration, h Header, payload []byte, maxPayload int64) (Header, []byte, error) {
	type answer struct {
		h       Header
		payload []byte
		err     error
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		werr := WriteFrame(m.stdin, h, payload)
		// Read even when the write failed: a helper that exits at once
		// (rknnlite missing) explains itself in an error frame first.
		a.h, a.payload, a.err = ReadFrame(m.stdout, maxPayload)
		if a.err != nil && werr != nil {
			a.err = fmt.Errorf("%w (writing the %s frame: %v)", a.err, h.Op, werr)
		}
		done <- a
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	cancelled := ctx.Done()
	for {
		select {
		case a := <-done:
			if a.err != nil {
				return a.h, nil, m.ioFailed(a.err)
			}
			if err := ctx.Err(); err != nil {
				return Header{}, nil, err // answered after the client left: dropped
			}
			if a.h.Op == OpError {
				return a.h, nil, &HelperError{Shard: a.h.Shard, Message: a.h.Message}
			}
			if a.h.ID != h.ID {
				return a.h, nil, m.ioFailed(fmt.Errorf("answer to frame %d arrived for frame %d", a.h.ID, h.ID))
			}
			return a.h, a.payload, nil
		case <-t.C:
			err := fmt.Errorf("%w: no answer to the %s frame within %v: killed (the next request starts a new helper)", ErrTimeout, h.Op, timeout)
			m.kill(err)
			<-done // the kill closes the pipes
			return Header{}, nil, err
		case <-cancelled:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) { // the caller's own timeout
				m.kill(fmt.Errorf("%w: the %s frame outlived the request's deadline: killed", ErrTimeout, h.Op))
				<-done
				return Header{}, nil, fmt.Errorf("%w: the request's deadline passed while the helper ran it", ErrTimeout)
			}
			// The client left: the NPU cannot be interrupted, so the answer
			// is awaited (within timeout) and dropped, keeping the helper.
			cancelled = nil
		}
	}
}

// ioFailed marks the helper unusable after a broken exchange and ends it.
// At end of output it has exited or is exiting: its status and last
// stderr lines say why. A read of a closed pipe is the same end: stdout is
// closed only once the helper is ended (stop, Close).
func (m *Model) ioFailed(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		m.waitExit(m.opts.StopTimeout)
		m.exitMu.Lock()
		werr := m.waitErr
		m.exitMu.Unlock()
		err = fmt.Errorf("%w (%v) during the request: %v; its last output: %s", ErrExited, werr, err, m.tail.String())
	}
	m.kill(err)
	return err
}

// kill ends a helper that stopped answering; the model is dead from now.
func (m *Model) kill(reason error) {
	m.dead.Keep(reason)
	m.signal(syscall.SIGKILL)
}

// signal sends sig to the helper's process group (it leads one), so a
// helper that started children takes them along.
func (m *Model) signal(sig syscall.Signal) {
	if err := syscall.Kill(-m.cmd.Process.Pid, sig); err != nil {
		_ = m.cmd.Process.Signal(sig)
	}
}

func (m *Model) waitExit(d time.Duration) bool {
	select {
	case <-m.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// stop ends the helper: the quit frame (it releases every shard), then
// SIGTERM, then SIGKILL, each given StopTimeout.
func (m *Model) stop() {
	if !m.waitExit(0) {
		go func() { _ = WriteFrame(m.stdin, Header{Op: OpQuit}, nil) }() // a stuck helper does not read it
		if !m.waitExit(m.opts.StopTimeout) {
			m.signal(syscall.SIGTERM)
			if !m.waitExit(m.opts.StopTimeout) {
				m.signal(syscall.SIGKILL)
				m.waitExit(m.opts.StopTimeout)
			}
		}
	}
	m.stdin.Close()
	m.out.Close()
}

// Close stops the helper: gracefully when it is idle; at once when a
// request is running (the watchdog's kill), which that request then sees
// as the helper's exit.
func (m *Model) Close() error {
	m.closeOnce.Do(func() {
		m.dead.Keep(errors.New("model closed"))
		if !m.mu.TryLock() {
			m.signal(syscall.SIGKILL)
			m.waitExit(m.opts.StopTimeout)
			m.out.Close() // the running request reads EOF or a closed pipe: the exit
			return
		}
		defer m.mu.Unlock()
		m.stop()
	})
	return nil
}

// HelperError is an error frame: the helper failed a request and stays
// ready for the next one.
type HelperError struct {
	Shard   *int
	Message string
}

func (e *HelperError) Error() string {
	if e.Shard != nil {
		return fmt.Sprintf("rknn helper: shard %d failed: %s", *e.Shard, e.Message)
	}
	return "rknn helper: " + e.Message
}

// tailLog keeps the helper's last stderr lines for error messages.
type tailLog struct {
	mu    sync.Mutex
	lines []string
}

func (t *tailLog) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, clip(line, 300))
	if len(t.lines) > 5 {
		t.lines = t.lines[len(t.lines)-5:]
	}
}

func (t *tailLog) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "(nothing on stderr)"
	}
	return fmt.Sprintf("%q", strings.Join(t.lines, "\n"))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
