// Package upstream is the HTTP lane: it serves a model through any
// OpenAI-compatible server (axllm serve, FastFlowLM, llama-server, Lemonade,
// main_api_*), either reached by URL or started as a child process, and
// normalizes their quirks (errors sent with HTTP 200, non-standard finish
// reasons, a single `messages` object, vendor usage fields) into
// engine.Result. See ../shared/docs/serving.md §8–§10.
package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/envconfig"
)

// Config describes one upstream model (the `upstreams` list of the serve
// config file).
type Config struct {
	// Name is the model name edgectl serves it under.
	Name string `json:"name"`
	// URL is the server's base URL (http://127.0.0.1:8000, with or without
	// /v1). With Command it may use {port}; default http://127.0.0.1:{port}.
	URL string `json:"url,omitempty"`
	// Command starts the server as a child process; "{port}" is replaced
	// by a free local port.
	Command []string `json:"command,omitempty"`
	Env     []string `json:"env,omitempty"`
	// Model is the id sent upstream (default Name); axllm serve and
	// main_api_* need their exact model_name.
	Model  string `json:"model,omitempty"`
	APIKey string `json:"api_key,omitempty"`
	// Health is the readiness path (default: /health, then /v1/models).
	Health string `json:"health,omitempty"`
	// SingleMessage sends `messages` as one object, as main_api_* requires.
	SingleMessage bool `json:"single_message,omitempty"`
	// SizeMB is the memory the upstream holds, for the lane's budget.
	SizeMB int64 `json:"size_mb,omitempty"`
	// Lane groups upstreams that share hardware (default "upstream:NAME");
	// Parallel is that lane's concurrency (default 1).
	Lane     string `json:"lane,omitempty"`
	Parallel int    `json:"parallel,omitempty"`
	// ContextLength is reported in /api/show and /api/ps when known; with
	// SingleMessage it also bounds the folded conversation (fold.go).
	ContextLength int `json:"context_length,omitempty"`
}

// Options tune every upstream.
type Options struct {
	StartTimeout time.Duration // wait for health (default 2m)
	StopTimeout  time.Duration // SIGTERM → SIGKILL (default 10s)
	Client       *http.Client  // default: a client with no overall timeout (streams)
	// Logf receives warnings (a single_message conversation truncated to
	// context_length); nil: discarded.
	Logf func(format string, args ...any)
}

// Engine loads upstream models by name.
type Engine struct {
	opts  Options
	byKey map[string]Config
}

// Prefix marks an upstream in a registry path: "upstream:NAME".
const Prefix = "upstream:"

// Path is the path serve's registry gives an upstream.
func Path(name string) string { return Prefix + name }

// New returns the upstream lane for cfgs.
func New(cfgs []Config, opts Options) *Engine {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Transport: &http.Transport{
			Proxy:               nil, // local servers: never through a proxy
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
		}}
	}
	e := &Engine{opts: opts, byKey: map[string]Config{}}
	for _, c := range cfgs {
		e.byKey[c.Name] = c
	}
	return e
}

// Name is "upstream".
func (e *Engine) Name() string { return "upstream" }

// Load starts the upstream's process when it has one and waits until it is
// healthy.
func (e *Engine) Load(ctx context.Context, path string, _ engine.LoadOptions) (engine.Model, error) {
	name, ok := strings.CutPrefix(path, Prefix)
	cfg, known := e.byKey[name]
	if !ok || !known {
		return nil, fmt.Errorf("%s: not a configured upstream: %w", path, engine.ErrUnsupported)
	}
	m := &Model{cfg: cfg, opts: e.opts, client: e.opts.Client}
	m.info = engine.ModelInfo{Name: cfg.Name, Format: "upstream", SizeBytes: cfg.SizeMB << 20, ContextLength: cfg.ContextLength}
	base := cfg.URL
	if len(cfg.Command) > 0 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		if base == "" {
			base = "http://127.0.0.1:{port}"
		}
		base = strings.ReplaceAll(base, "{port}", strconv.Itoa(port))
		if err := m.startChild(port); err != nil {
			return nil, err
		}
	}
	if base == "" {
		return nil, fmt.Errorf("upstream %q: set url or command in the serve config", cfg.Name)
	}
	m.base = strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1")
	if err := m.waitHealthy(ctx); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for an upstream: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Model is one upstream server (and its process, when edgectl started it).
type Model struct {
	cfg    Config
	opts   Options
	client *http.Client
	info   engine.ModelInfo
	base   string

	cmd    *exec.Cmd
	logs   *tailBuffer
	exited chan struct{}

	broken engine.FirstError // why the upstream can take no more requests
	once   sync.Once
}

// Info describes the upstream.
func (m *Model) Info() engine.ModelInfo { return m.info }

// BaseURL is where the upstream listens.
func (m *Model) BaseURL() string { return m.base }

// Alive reports whether the upstream can take requests: its process is
// running and the last request did not fail to reach it.
func (m *Model) Alive() error {
	if err := m.broken.Err(); err != nil {
		return err
	}
	if m.exited != nil { // set once, before Load returns the model
		select {
		case <-m.exited:
			return fmt.Errorf("upstream %q exited: %s", m.cfg.Name, m.logs.String())
		default:
		}
	}
	return nil
}

func (m *Model) startChild(port int) error {
	args := make([]string, len(m.cfg.Command))
	for i, a := range m.cfg.Command {
		args[i] = strings.ReplaceAll(a, "{port}", strconv.Itoa(port))
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = envconfig.ChildEnv(m.cfg.Env...)
	m.logs = &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = m.logs, m.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("upstream %q: start %s: %w", m.cfg.Name, args[0], err)
	}
	m.cmd = cmd
	m.exited = make(chan struct{})
	go func() { cmd.Wait(); close(m.exited) }()
	return nil
}

// waitHealthy polls the health path until it answers 200. 503 means
// "loading" (llama-server); a 404 moves on to the next candidate path.
func (m *Model) waitHealthy(ctx context.Context) error {
	paths := []string{"/health", "/v1/models"}
	if m.cfg.Health != "" {
		paths = []string{m.cfg.Health}
	}
	wait := m.opts.StartTimeout
	if m.cmd == nil {
		// A server reached by URL is either up or not: do not hold the
		// request for a child-process start time.
		wait = min(wait, 10*time.Second)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	last := "no answer"
	for i := 0; ; {
		if err := m.Alive(); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.base+paths[i], nil)
		m.auth(req)
		resp, err := m.client.Do(req)
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				return nil
			case resp.StatusCode == http.StatusNotFound && i+1 < len(paths):
				i++
				continue
			}
			last = fmt.Sprintf("GET %s: %s", paths[i], resp.Status)
		} else if ctx.Err() == nil || last == "no answer" {
			// The attempt the deadline cut short says less than the one
			// before it (connection refused, a 503): keep that one.
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("upstream %q at %s not healthy after %v (%s)%s", m.cfg.Name, m.base, wait, last, m.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (m *Model) logTail() string {
	if m.logs == nil {
		return ""
	}
	return "; its output: " + m.logs.String()
}

func (m *Model) auth(req *http.Request) {
	if m.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
}

// Close stops a child upstream (SIGTERM, then SIGKILL) and drops idle
// connections.
func (m *Model) Close() error {
	m.once.Do(func() {
		m.broken.Keep(errors.New("model closed"))
		if m.cmd != nil {
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-m.exited:
			case <-time.After(m.opts.StopTimeout):
				_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
				<-m.exited
			}
		}
		if t, ok := m.client.Transport.(interface{ CloseIdleConnections() }); ok {
			t.CloseIdleConnections()
		}
	})
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(bytes.TrimSpace(t.b))
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	return fmt.Sprintf("%q", s)
}
