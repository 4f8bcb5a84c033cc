// Package serve is edgectl's model server: one OpenAI- and Ollama-compatible
// HTTP API over every lane that can run a model — the pure-Go CPU engine,
// the Axera vendor runtime behind a PTY, and OpenAI-compatible upstreams —
// with a scheduler that loads and swaps models within each lane's memory
// budget, a bounded queue, a watchdog, and telemetry in every answer.
package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/upstream"
)

// Options configure a Server. Engines maps lane names to the engine that
// runs them (the registry asks those that are engine.Probers which paths
// are their models); Lanes their limits.
type Options struct {
	ModelDirs []string
	Upstreams []upstream.Config
	Engines   map[string]engine.Engine
	Lanes     map[string]LaneConfig

	APIKey    string
	KeepAlive time.Duration // 0: 5m; api.Forever never unloads; KeepAliveNone unloads after each request
	MaxQueue  int           // requests waiting for a slot or a load (default 64)
	// Watchdog is how long a running request may go without a token before
	// its backend is killed and restarted (default 120s; it covers prefill).
	Watchdog time.Duration
	// WatchdogGrace is how long a killed request waits for its backend to
	// return before answering anyway (default 5s).
	WatchdogGrace time.Duration
	RetryAfter    time.Duration // Retry-After on 503 (default 2s)

	// Origins are browser origins allowed besides the local ones (see
	// defaultOrigins): exact, "*" for all, or with one "*" wildcard.
	Origins []string
	// AllowedHosts are Host names accepted without an API key besides
	// loopback ones and the listening address ("*" all, "*.example").
	AllowedHosts []string
	MaxBody      int64         // request body limit in bytes (default 8 MiB): 413 beyond it
	BodyTimeout  time.Duration // time to receive a request body (default 30s): 408 after it

	// HotTempC is the temperature (°C, the hotter of the NPU and the host)
	// above which /health says "hot" and the log warns (default 85).
	HotTempC float64
	// NPU reads the accelerator's own sensors (the axcl lane's axcl-smi)
	// for telemetry and /health; nil where there is none.
	NPU func(context.Context) (NPUReading, error)
	// Tests: a fake root for /proc and /sys, and the sampling period.
	sysRoot     string
	sampleEvery time.Duration

	Logf func(format string, args ...any)
}

// KeepAliveNone as Options.KeepAlive unloads models after every request.
const KeepAliveNone = time.Duration(-1)

// Server is the HTTP API.
type Server struct {
	opts           Options
	reg            *Registry
	sched          *Scheduler
	metrics        *metrics
	metricsHandler http.Handler
	mon            *monitor
	mux            *http.ServeMux
	handler        http.Handler
	bound          atomic.Pointer[[]string] // the listener's own address, once serving
}

// New builds a server; nothing is loaded until a request needs it.
func New(opts Options) (*Server, error) {
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 5 * time.Minute
	}
	if opts.MaxQueue <= 0 {
		opts.MaxQueue = 64
	}
	if opts.Watchdog <= 0 {
		opts.Watchdog = 120 * time.Second
	}
	if opts.WatchdogGrace <= 0 {
		opts.WatchdogGrace = 5 * time.Second
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 2 * time.Second
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = api.DefaultMaxBody
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 30 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	s := &Server{opts: opts, mon: newMonitor(opts)}
	s.metrics = newMetrics(func() *Scheduler { return s.sched })
	s.metricsHandler = newMetricsHandler(s.metrics)
	s.reg = NewRegistry(opts.ModelDirs, opts.Engines, opts.Upstreams)
	lanes := map[string]*lane{}
	for name, eng := range opts.Engines {
		cfg := opts.Lanes[name]
		if name == LaneCPU {
			cfg.ChatFallback = true
		}
		lanes[name] = &lane{name: name, eng: eng, cfg: cfg, closing: map[*runner]bool{}}
	}
	for _, u := range opts.Upstreams {
		name := u.Lane
		if name == "" {
			name = "upstream:" + u.Name
		}
		if _, ok := lanes[name]; ok {
			continue
		}
		eng := opts.Engines["upstream"]
		if eng == nil {
			return nil, fmt.Errorf("upstream %q configured but no upstream engine given", u.Name)
		}
		cfg := opts.Lanes[name]
		if cfg.Parallel == 0 {
			cfg.Parallel = max(u.Parallel, 1)
		}
		lanes[name] = &lane{name: name, eng: eng, cfg: cfg, closing: map[*runner]bool{}}
	}
	delete(lanes, "upstream") // the engine, not a lane of its own
	s.sched = newScheduler(lanes, opts.MaxQueue, opts.KeepAlive, opts.Logf, s.metrics)
	s.sched.engines = opts.Engines
	s.sched.loadOpts = func(l *lane) engine.LoadOptions {
		return engine.LoadOptions{Threads: l.cfg.Threads, Mmap: l.cfg.Mmap, Head: l.cfg.Head, ContextLength: l.cfg.Context}
	}
	for _, w := range s.reg.Warnings() {
		opts.Logf("warning: %s", w)
	}
	s.routes()
	go s.mon.run()
	// Outside in: count everything; refuse foreign Hosts and origins
	// before anything runs; the key; then the body, read within limits.
	s.handler = s.observe(s.checkHost(s.cors(s.auth(s.readBody(s.routed(s.mux))))))
	return s, nil
}

// Registry is the model list (for logs and the command's --json summary).
func (s *Server) Registry() *Registry { return s.reg }

// Handler is the HTTP API with its guards: metrics, Host and Origin
// checks, authentication and body limits.
func (s *Server) Handler() http.Handler { return s.handler }

// Close unloads every model and stops the backends.
func (s *Server) Close() {
	s.mon.close()
	s.sched.Close()
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/chat/completions", s.handleChatCompletions)
	m.HandleFunc("POST /v1/completions", s.handleCompletions)
	m.HandleFunc("POST /v1/responses", s.handleResponses)               // serve/responses.go
	m.HandleFunc("POST /v1/messages", s.handleMessages)                 // serve/anthropic.go
	m.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens) // serve/anthropic.go
	m.HandleFunc("POST /v1/embeddings", s.handleOpenAIEmbeddings)       // serve/embed.go
	m.HandleFunc("POST /v1/rknn/encode", s.handleRKNNEncode)            // serve/rknn_encode.go
	m.HandleFunc("GET /v1/models", s.handleModels)
	m.HandleFunc("GET /v1/models/{id...}", s.handleModel)
	m.HandleFunc("POST /api/generate", s.handleGenerate)
	m.HandleFunc("POST /api/chat", s.handleChat)
	m.HandleFunc("POST /api/embed", s.handleOllamaEmbed)
	m.HandleFunc("POST /api/embeddings", s.handleOllamaEmbeddings)
	m.HandleFunc("GET /api/tags", s.handleTags)
	m.HandleFunc("HEAD /api/tags", s.handleTags)
	m.HandleFunc("GET /api/ps", s.handlePS)
	m.HandleFunc("POST /api/show", s.handleShow)
	m.HandleFunc("GET /api/version", s.handleVersion)
	m.HandleFunc("HEAD /api/version", s.handleVersion)
	m.HandleFunc("GET /health", s.handleHealth)
	m.HandleFunc("GET /metrics", s.handleMetrics)
	m.HandleFunc("GET /{$}", s.handleRoot) // the chat page to browsers (serve/chatpage.go)
	m.HandleFunc("HEAD /{$}", func(w http.ResponseWriter, r *http.Request) {})
	s.mux = m
}

// auth requires `Authorization: Bearer KEY` (or Anthropic's `x-api-key:
// KEY`) on every route but /health and / (the chat page, which asks for
// the key).
func (s *Server) auth(next http.Handler) http.Handler {
	if s.opts.APIKey == "" {
		return next
	}
	want, key := []byte("Bearer "+s.opts.APIKey), []byte(s.opts.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" || isChatPage(r) || subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1 ||
			subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Api-Key")), key) == 1 { // Anthropic's clients send the key so
			next.ServeHTTP(w, r)
			return
		}
		refuse(w, r, http.StatusUnauthorized, "missing or wrong API key: send Authorization: Bearer <key> (or x-api-key: <key>)")
	})
}

// CheckAddr refuses to expose the API beyond this machine without a key.
func CheckAddr(addr, apiKey string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v (use HOST:PORT, e.g. 127.0.0.1:11434)", addr, err)
	}
	if apiKey != "" || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--addr %s listens beyond this machine: set --api-key (or EDGECTL_API_KEY) so the API is not open to the network, or bind 127.0.0.1", addr)
}

// Serve answers on ln until ctx ends, then shuts down gracefully and
// unloads every model. Headers must arrive within 10 s and bodies within
// Options.BodyTimeout; answers have no time limit (streams run as long as
// the generation).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsUnspecified() {
		s.bound.Store(&[]string{strings.ToLower(a.IP.String())})
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	s.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		hs.Close()
		err = nil
	}
	return err
}
