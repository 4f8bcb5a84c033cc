package axcl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/envconfig"
)

// Model is one running vendor runtime process.
type Model struct {
	dir  string
	opts Options
	info engine.ModelInfo

	cmmBefore int64 // CMM MiB in use before the process started
	smiOK     bool  // axcl-smi answered: teardown checks the memory came back

	cmd     *exec.Cmd
	pty     *os.File
	out     chan []byte   // PTY reads; closed when the PTY reports EOF/EIO
	exited  chan struct{} // closed when the process has been reaped
	stop    chan struct{} // closed by Close
	waitErr error

	p       parser
	pending []event
	tail    []byte // last output, for error messages

	initCMM   int // remain_cmm at init (MiB)
	maxTokens int // max_token_len at init

	mu    sync.Mutex // one conversation turn at a time
	dirty bool       // a turn ran since start or the last reset
	// The conversation the runtime's KV cache holds (conversation.go); nil
	// when unknown (after an error), which forces a rebuild.
	held          *conversation
	defaultSystem string  // config.json's system_prompt
	system        string  // the system prompt the process was started with
	sysVia        sysMode // how a system prompt reaches the runtime
	shadow        string  // per-model directory with a rewritten config.json
	countTokens   func(string) int
	exactTokens   bool          // countTokens is the model's own tokenizer
	samp          samplingState // post_config.json it runs with (sampling.go)

	procMu    sync.Mutex        // process start/stop (restart, Close)
	dead      engine.FirstError // why the runtime can take no more requests
	exitMu    sync.Mutex        // exited and waitErr, which a restart replaces
	closeOnce sync.Once
	closeErr  error
}

// Info describes the loaded model.
func (m *Model) Info() engine.ModelInfo { return m.info }

// PID is the runtime's process id (tests and logs).
func (m *Model) PID() int { return m.cmd.Process.Pid }

// Alive returns nil while the runtime can take requests, else why not.
// serve checks it after every request and reloads a dead model.
func (m *Model) Alive() error {
	if err := m.dead.Err(); err != nil {
		return err
	}
	m.exitMu.Lock()
	defer m.exitMu.Unlock()
	select {
	case <-m.exited:
		return fmt.Errorf("%w: %v", ErrExited, m.waitErr)
	default:
		return nil
	}
}

// start runs args and waits for the first prompt.
func (m *Model) start(ctx context.Context, args []string) error {
	master, tty, err := pty.Open()
	if err != nil {
		return fmt.Errorf("open pseudo-terminal for %s: %w", args[0], err)
	}
	// No echo: everything the runtime prints is then its own output. Wide
	// lines: the runtime's logs never wrap.
	if t, err := unix.IoctlGetTermios(int(tty.Fd()), ioctlGetTermios); err == nil {
		t.Lflag &^= unix.ECHO
		_ = unix.IoctlSetTermios(int(tty.Fd()), ioctlSetTermios, t)
	}
	_ = pty.Setsize(master, &pty.Winsize{Rows: 50, Cols: 1000})

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = m.dir
	cmd.Env = envconfig.ChildEnv(m.opts.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	// End what a killed server left and record this runtime, as one step
	// (recovery.go).
	recoverMu.Lock()
	recoverLeftovers(ctx, m.opts)
	if err := cmd.Start(); err != nil {
		recoverMu.Unlock()
		master.Close()
		tty.Close()
		return fmt.Errorf("start %s: %w (install the ax-llm runtime or set the axcl command in the serve config)", args[0], err)
	}
	pidFile, err := writePIDFile(m.opts, cmd.Process.Pid, args, m.dir)
	recoverMu.Unlock()
	if err != nil { // the runtime runs; only a later recovery would miss it
		m.opts.Logf("axcl: warning: %v", err)
	}
	tty.Close()
	exited := make(chan struct{})
	m.cmd, m.pty = cmd, master
	m.out = make(chan []byte, 256)
	m.stop = make(chan struct{})
	m.p, m.pending, m.tail = parser{}, nil, nil
	m.exitMu.Lock()
	m.exited, m.waitErr = exited, nil
	m.exitMu.Unlock()
	out, stop := m.out, m.stop
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				select {
				case out <- append([]byte(nil), buf[:n]...):
				case <-stop:
				}
			}
			if err != nil {
				close(out)
				return
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		if pidFile != "" {
			os.Remove(pidFile) // reaped: nothing left to recover
		}
		m.exitMu.Lock()
		m.waitErr = err
		m.exitMu.Unlock()
		close(exited)
	}()

	ctx, cancel := context.WithTimeout(ctx, m.opts.StartTimeout)
	defer cancel()
	for {
		ev, err := m.next(ctx)
		if err != nil {
			m.stopProcess()
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("%s: no \"prompt >> \" after %v: %s", m.dir, m.opts.StartTimeout, m.lastOutput())
			}
			return fmt.Errorf("load %s: %w", m.dir, err)
		}
		switch ev.kind {
		case evReady:
			return nil
		case evLog, evText:
			if f, ok := parseLog(ev.text); ok {
				if f.cmmMB > 0 {
					m.initCMM = f.cmmMB
				}
				if f.maxTokens > 0 {
					m.maxTokens = f.maxTokens
					m.info.ContextLength = f.maxTokens
				}
			}
		}
	}
}

// next returns the next parsed event, waiting for output until ctx ends.
func (m *Model) next(ctx context.Context) (event, error) {
	for len(m.pending) == 0 {
		select {
		case b, ok := <-m.out:
			if !ok {
				select {
				case <-m.exited:
				case <-time.After(m.opts.StopTimeout):
				}
				m.exitMu.Lock() // still running after StopTimeout: cmd.Wait may set it now
				werr := m.waitErr
				m.exitMu.Unlock()
				err := fmt.Errorf("%w (%v); last output: %s", ErrExited, werr, m.lastOutput())
				m.dead.Keep(err)
				return event{}, err
			}
			m.keepTail(b)
			m.pending = m.p.feed(b)
		case <-ctx.Done():
			return event{}, ctx.Err()
		}
	}
	ev := m.pending[0]
	m.pending = m.pending[1:]
	return ev, nil
}

func (m *Model) keepTail(b []byte) {
	m.tail = append(m.tail, b...)
	if len(m.tail) > 2048 {
		m.tail = m.tail[len(m.tail)-2048:]
	}
}

func (m *Model) lastOutput() string {
	s := reANSI.ReplaceAllString(string(m.tail), "")
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r", ""))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 && len(s)-i < 200 {
		// the last line usually says what went wrong; keep the one before too
		if j := strings.LastIndexByte(s[:i], '\n'); j >= 0 {
			s = s[j+1:]
		}
	}
	if len(s) > 300 {
		s = "…" + s[len(s)-300:]
	}
	return fmt.Sprintf("%q", s)
}

func (m *Model) write(s string) error {
	_, err := m.pty.Write([]byte(s))
	return err
}

// waitReady discards output until the prompt, up to StopTimeout.
func (m *Model) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.StopTimeout)
	defer cancel()
	for {
		ev, err := m.next(ctx)
		if err != nil {
			return err
		}
		if ev.kind == evReady {
			return nil
		}
	}
}

// signal sends sig to the runtime's process group (it leads its session).
func (m *Model) signal(sig syscall.Signal) {
	_ = syscall.Kill(-m.cmd.Process.Pid, sig)
}

func (m *Model) waitExit(d time.Duration) bool {
	select {
	case <-m.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// kill ends a runtime that stopped answering.
func (m *Model) kill(reason error) {
	m.dead.Keep(reason)
	m.signal(syscall.SIGKILL)
}

// Close stops the runtime: the quit command, then SIGTERM, then SIGKILL,
// each given StopTimeout. It then checks with axcl-smi that the CMM memory
// the process held came back (ax-llm#60: crashed runtimes kept their pool).
// Close does not wait for a running Generate: that returns once the
// process is gone.
func (m *Model) Close() error {
	m.closeOnce.Do(func() {
		m.dead.Keep(errors.New("model closed"))
		m.procMu.Lock()
		m.stopProcess()
		m.removeShadow()
		m.procMu.Unlock()
		if m.smiOK {
			m.closeErr = m.checkCMM()
		}
	})
	return m.closeErr
}

// stopProcess ends the runtime: the quit command, then SIGTERM, then
// SIGKILL, each given StopTimeout.
func (m *Model) stopProcess() {
	if !m.waitExit(0) {
		_ = m.write(m.opts.QuitCommand + "\n")
		if !m.waitExit(m.opts.StopTimeout / 2) {
			m.signal(syscall.SIGTERM)
			if !m.waitExit(m.opts.StopTimeout) {
				m.signal(syscall.SIGKILL)
				m.waitExit(m.opts.StopTimeout)
			}
		}
	}
	close(m.stop) // the reader must not block on a full channel
	m.pty.Close()
}

// checkCMM waits briefly for the driver to return the process's CMM pool.
func (m *Model) checkCMM() error {
	const slackMiB = 16
	deadline := time.Now().Add(m.opts.StopTimeout)
	for {
		used, ok := m.cmmUsed()
		if !ok {
			return nil
		}
		if used <= m.cmmBefore+slackMiB {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: NPU memory not released after the runtime exited: CMM used %d MiB, %d MiB before load (check `axcl-smi`; reset the card with `axcl-smi reboot -d %d` if it stays)",
				m.dir, used, m.cmmBefore, m.opts.Device)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
