package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/rknnrt"
	"github.com/edgectl/edgectl/engine/upstream"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/serve"
)

func init() { register(newServeCmd) }

type serveOptions struct {
	Models    []string
	Addr      string
	APIKey    string
	Config    string
	KeepAlive string
	MaxQueue  int
	Watchdog  time.Duration
	Axllm     string
	NPUBudget int64
	CPUBudget int64
	Context   int

	Origins      []string
	AllowedHosts []string
	MaxBody      string
	BodyTimeout  time.Duration
	HotTemp      float64

	changed func(string) bool
}

func newServeCmd(io *cli.IO) *cobra.Command { return newServeCmdWith(io, runServe) }

func newServeCmdWith(io *cli.IO, runF func(context.Context, *cli.IO, *serveOptions) error) *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve models over OpenAI-, Ollama- and Anthropic-compatible APIs on CPU, NPU and upstream lanes",
		Long: `Serve exposes every model found in the --models directories (Hugging Face
checkpoints, .gguf, .h1b: CPU lane; compiled ax-llm directories: NPU lane via
the vendor runtime) and every upstream server in --config over one HTTP API:
OpenAI /v1/chat/completions, /v1/completions, /v1/responses, /v1/embeddings,
/v1/models; Anthropic /v1/messages; Ollama /api/*; a chat page at / for
browsers.
Models load on first use, stay for keep_alive, and are evicted least
recently used when a lane's memory budget is full. It binds 127.0.0.1 unless
told otherwise; a non-loopback --addr needs --api-key.`,
		Example: `  edgectl serve --models ~/models
  edgectl serve --models /data/axmodels --addr 0.0.0.0:11434 --api-key "$KEY"
  edgectl serve --config serve.json --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.changed = cmd.Flags().Changed
			return runF(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.Models, "models", nil, "directory of models, one model, NAME=PATH, or a Hub id ORG/NAME[@REV] (repeatable)")
	f.StringVar(&opts.Addr, "addr", "127.0.0.1:11434", "listen address (env EDGECTL_HOST)")
	f.StringVar(&opts.APIKey, "api-key", "", "require Authorization: Bearer KEY (or x-api-key: KEY) on every route but /health and the chat page (env EDGECTL_API_KEY)")
	f.StringVar(&opts.Config, "config", "", "JSON config file: lanes, upstreams, vendor runtime (see docs/serve.md)")
	f.StringVar(&opts.KeepAlive, "keep-alive", "5m", "default time an idle model stays loaded (-1: forever, 0: unload after each request; env EDGECTL_KEEP_ALIVE)")
	f.IntVar(&opts.MaxQueue, "max-queue", 64, "requests that may wait for a slot or a load before 503")
	f.DurationVar(&opts.Watchdog, "watchdog", 120*time.Second, "kill and restart a backend that produces no token for this long")
	f.StringVar(&opts.Axllm, "axllm", "axllm", "the ax-llm runtime binary for compiled model directories")
	f.Int64Var(&opts.NPUBudget, "npu-budget-mb", 7040, "NPU (CMM) memory the axcl lane may fill with models")
	f.Int64Var(&opts.CPUBudget, "cpu-budget-mb", 0, "RAM the cpu lane may fill with models (0: up to 3 models)")
	f.IntVar(&opts.Context, "ctx", 0, "context window in tokens of each cpu-lane model (0: the model's own, bounded by memory)")
	f.StringSliceVar(&opts.Origins, "origins", nil, "browser origins allowed besides local pages, comma-separated; * wildcards (env EDGECTL_ORIGINS)")
	f.StringSliceVar(&opts.AllowedHosts, "allowed-hosts", nil, "Host names accepted without --api-key besides loopback ones, comma-separated (env EDGECTL_ALLOWED_HOSTS)")
	f.StringVar(&opts.MaxBody, "max-body", "8MiB", "largest request body; larger ones get 413")
	f.DurationVar(&opts.BodyTimeout, "body-timeout", 30*time.Second, "time a client has to send a request body; slower ones get 408")
	f.Float64Var(&opts.HotTemp, "hot-temp", serve.DefaultHotTempC, "°C above which /health reports \"hot\" and the log warns (NPU or host, whichever is hotter)")
	return cmd
}

func runServe(ctx context.Context, io *cli.IO, opts *serveOptions) error {
	fc := &serve.FileConfig{}
	if opts.Config != "" {
		c, err := serve.ReadConfig(opts.Config)
		if err != nil {
			return errkind.Wrap(errkind.Usage, err)
		}
		fc = c
	}
	// flags > --config > environment > defaults, for every setting
	st, err := resolveServe(opts, fc)
	if err != nil {
		return err
	}
	models, addr, key, keepAlive, maxQueue, watchdog := st.Models, st.Addr, st.APIKey, st.KeepAlive, st.MaxQueue, st.Watchdog
	if len(models) == 0 && len(fc.Upstreams) == 0 {
		return usagef("nothing to serve: give --models DIR (or models/upstreams in --config, or EDGECTL_MODELS)")
	}
	// Hub ids among the models: from the HF cache, pulled when missing.
	models, err = resolveModelSpecs(ctx, io, models)
	if err != nil {
		return err
	}

	lanes := st.Lanes
	maxBody, err := serve.ParseSize(opts.MaxBody)
	if err != nil {
		return usagef("--max-body: %v", err)
	}
	if opts.BodyTimeout <= 0 {
		return usagef("--body-timeout must be > 0 (got %v)", opts.BodyTimeout)
	}
	allowedHosts := st.AllowedHosts
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			allowedHosts = append(allowedHosts, h) // the name the server was told to listen on
		}
	}
	ax := axcl.Options{Command: fc.Axcl.Command, Env: fc.Axcl.Env, SMI: fc.Axcl.SMI, ResetCommand: fc.Axcl.ResetCommand,
		QuitCommand: fc.Axcl.QuitCommand, Device: fc.Axcl.Device}
	if len(ax.Command) == 0 {
		ax.Command = []string{opts.Axllm, "run", "{dir}"}
	}
	if fc.Axcl.StartTimeout != "" {
		ax.StartTimeout, _ = time.ParseDuration(fc.Axcl.StartTimeout)
	}
	logf := func(format string, args ...any) { io.Logf("serve: "+format, args...) }
	ax.Logf = logf // the lane's warnings (history truncated, restarts) in serve's log
	axEngine := axcl.New(ax)
	var npu func(context.Context) (serve.NPUReading, error)
	if axEngine.HasSMI() { // an AXCL card: its temperature and CMM come from axcl-smi
		npu = func(ctx context.Context) (serve.NPUReading, error) {
			c, err := axEngine.Card(ctx)
			return serve.NPUReading{TempC: c.TempC, CMMUsedMB: c.CMMUsedMiB, CMMTotalMB: c.CMMTotalMiB}, err
		}
	}
	srv, err := serve.New(serve.Options{
		ModelDirs: models,
		Upstreams: fc.Upstreams,
		Engines: map[string]engine.Engine{
			serve.LaneCPU:  cpu.New(),
			serve.LaneAxcl: axEngine,
			serve.LaneRKNN: rknnrt.New(rknnrt.Options{Logf: logf}), // built shard chains on the RK3588 NPU
			"upstream":     upstream.New(fc.Upstreams, upstream.Options{Logf: logf}),
		},
		Lanes:     lanes,
		APIKey:    key,
		KeepAlive: keepAlive,
		MaxQueue:  maxQueue,
		Watchdog:  watchdog,
		Logf:      logf,

		Origins:      st.Origins,
		AllowedHosts: allowedHosts,
		MaxBody:      maxBody,
		BodyTimeout:  opts.BodyTimeout,
		HotTempC:     st.HotTempC,
		NPU:          npu,
	})
	if err != nil {
		return errkind.Wrap(errkind.Usage, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another server using the port? pick one with --addr)", addr, err)
	}
	var names []map[string]string
	for _, e := range srv.Registry().List() {
		names = append(names, map[string]string{"name": e.Name, "lane": e.Lane, "path": e.Path})
		logf("model %s (%s lane) %s", e.Name, e.Lane, e.Path)
	}
	url := "http://" + ln.Addr().String()
	io.Event(map[string]any{"event": "listening", "url": url, "models": names, "auth": key != ""})
	logf("listening on %s (%d models; OpenAI at %s/v1, Ollama at %s/api)", url, len(names), url, url)
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	io.Event(map[string]any{"event": "stopped"})
	logf("stopped")
	return nil
}
