// Package bench measures models the way `edgectl bench` reports them:
// prefill and decode rates and time to first token over several runs, the
// bytes a decode step reads set against the machine's measured read
// bandwidth (the roofline ratio), and the perplexity of a text. It runs a
// model in this process through the engine interface (the CPU engine), or
// any running OpenAI- or Ollama-compatible server by URL (remote.go), so a
// board's NPU lane, llama-server or FastFlowLM are measured the same way.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

// Options say what to measure and how to load the model.
type Options struct {
	Runs         int // measured runs, after one warm-up run that is not counted
	PromptTokens int // prompt length (exact in-process; approximate on a server: see PromptText)
	GenTokens    int // tokens generated greedily per run (at least 2: the first comes out of prefill)
	// Threads is the CPU engine's thread count and the bandwidth probe's
	// (0: all cores).
	Threads int
	// Context is the KV positions the model is loaded with (0: its own
	// limit, bounded by memory); perplexity windows are this long.
	Context int
	Mmap    bool   // engine.LoadOptions.Mmap
	Head    string // engine.LoadOptions.Head
	// Progress receives a Start and Done event around the load (step
	// "load") and one Progress event per run or perplexity window (step
	// "bench" or "perplexity"), whose Message is a line for people.
	Progress progress.Func
}

// Stat is one rate's median, minimum and maximum over the runs.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Report is what a benchmark measured: `edgectl bench --json` prints it.
// The memory figures are null for a server, whose weights edgectl cannot
// see.
type Report struct {
	Model        string `json:"model"`
	Engine       string `json:"engine"` // cpu, openai or ollama (a server at URL)
	URL          string `json:"url,omitempty"`
	Format       string `json:"format,omitempty"`
	Quantization string `json:"quantization,omitempty"`
	Threads      int    `json:"threads,omitempty"`
	Runs         int    `json:"runs"`
	// PromptTokens is the prompt as the engine or server counted it (the
	// median over the runs); GenTokens the fewest tokens a run generated
	// (fewer than asked when the model ended its answer).
	PromptTokens int `json:"prompt_tokens"`
	GenTokens    int `json:"gen_tokens"`

	PrefillTPS Stat `json:"prefill_tok_s"`
	DecodeTPS  Stat `json:"decode_tok_s"`
	TTFTMS     Stat `json:"ttft_ms"`
	// Timing says where the rates come from (docs/engine.md, "edgectl
	// bench").
	Timing string `json:"timing"`

	// BytesPerToken is the mean over a run's decode steps of what one
	// step reads: WeightBytesPerToken (every weight once) plus
	// KVBytesPerToken (the K and V rows of the positions cached so far).
	BytesPerToken       *int64 `json:"bytes_per_token"`
	WeightBytesPerToken *int64 `json:"weight_bytes_per_token"`
	KVBytesPerToken     *int64 `json:"kv_bytes_per_token"`
	// ReadGBs is the median of the read-bandwidth probes taken before each
	// run (10⁹ bytes per second); RooflineRatio the median over the runs
	// of decode tok/s × bytes per token ÷ that run's probe; RooflineTPS
	// the decode rate the probe allows (read rate ÷ bytes per token).
	ReadGBs       *float64 `json:"read_gb_s"`
	RooflineRatio *float64 `json:"roofline_ratio"`
	RooflineTPS   *float64 `json:"roofline_tok_s"`

	LoadAverage string `json:"load_average,omitempty"` // /proc/loadavg when the runs ended
}

// run is one measured generation.
type run struct {
	prefillTPS, decodeTPS, ttftMS float64
	prompt, gen                   int
	// In-process only: what a decode step read on average, and the
	// bandwidth probe taken just before the run (0: none).
	weights, kv float64
	readBps     float64
}

// Run benchmarks the model at path (a checkpoint directory, a .gguf or a
// .h1b file) on the CPU engine: one warm-up run, then o.Runs runs of
// o.PromptTokens prompt tokens (promptIDs) and o.GenTokens greedy tokens,
// never cut short by an end-of-sequence token, each from an empty cache
// (engine.TokenGenerator), each after a read-bandwidth probe.
func Run(ctx context.Context, path string, o Options) (*Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	s, err := openSession(ctx, path, o)
	if err != nil {
		return nil, err
	}
	defer s.m.Close()
	var runs []run
	for i := 1; i <= o.Runs; i++ {
		r, err := s.measure(ctx, i)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return s.report(runs), nil
}

// session is one model loaded, warmed up and ready to be measured.
type session struct {
	o      Options
	label  string // prefixed to its progress lines (Compare: the model's path)
	m      engine.Model
	info   engine.ModelInfo
	tg     engine.TokenGenerator
	roof   engine.Roofline // nil where the engine cannot say its bytes
	prompt []int
}

// openSession loads the model at path, checks that the runs fit its
// context, makes its prompt and runs the warm-up. The caller closes s.m.
func openSession(ctx context.Context, path string, o Options) (*session, error) {
	m, err := load(ctx, path, o)
	if err != nil {
		return nil, err
	}
	s, err := warm(ctx, path, m, o)
	if err != nil {
		m.Close()
		return nil, err
	}
	return s, nil
}

// warm is openSession's work once m is loaded.
func warm(ctx context.Context, path string, m engine.Model, o Options) (*session, error) {
	s := &session{o: o, m: m, info: m.Info()}
	if need := o.PromptTokens + o.GenTokens; need > s.info.ContextLength {
		return nil, errkind.Errorf(errkind.Input, "%s: %d prompt + %d generated tokens exceed the context of %d: lower --prompt-tokens or --gen-tokens, or raise --ctx",
			path, o.PromptTokens, o.GenTokens, s.info.ContextLength)
	}
	var ok bool
	if s.tg, ok = m.(engine.TokenGenerator); !ok {
		return nil, errkind.Errorf(errkind.Blocked, "%s: the %s engine cannot run token ids, so it cannot be benchmarked in process", path, s.info.Format)
	}
	sc, _ := m.(engine.Scorer)
	s.roof, _ = m.(engine.Roofline)
	var err error
	if s.prompt, err = promptIDs(ctx, sc, s.info.VocabSize, o.PromptTokens); err != nil {
		return nil, err
	}
	// The warm-up is short: it warms the caches and branch predictors and,
	// with --mmap, pages the weights in.
	if _, err := s.tg.GenerateTokens(ctx, s.prompt, 2); err != nil {
		return nil, err
	}
	return s, nil
}

// measure is run i of o.Runs: a read-bandwidth probe, then the
// generation.
func (s *session) measure(ctx context.Context, i int) (run, error) {
	var r run
	if s.roof != nil {
		r.readBps = s.roof.ReadBandwidth(s.o.Threads)
	}
	res, err := s.tg.GenerateTokens(ctx, s.prompt, s.o.GenTokens)
	if err != nil {
		return r, err
	}
	r.prefillTPS, r.decodeTPS = res.PrefillTPS(), res.DecodeTPS()
	r.ttftMS = float64(res.TTFT.Microseconds()) / 1000
	r.prompt, r.gen = res.PromptTokens, res.CompletionTokens
	if s.roof != nil {
		r.weights, r.kv = stepBytes(s.roof, r.prompt, r.gen)
	}
	if err := r.usable(i); err != nil {
		return r, err
	}
	s.o.Progress.Emit(progress.Event{Event: progress.Progress, Step: "bench", Done: int64(i), Total: int64(s.o.Runs), Unit: "runs", Message: s.label + r.line(i, s.o.Runs)})
	return r, nil
}

// report is the model's Report over runs.
func (s *session) report(runs []run) *Report {
	rep := summarize(runs)
	rep.Model, rep.Engine = s.info.Name, "cpu"
	rep.Format, rep.Quantization = s.info.Format, s.info.Quantization
	rep.Threads = s.o.Threads
	if rep.Threads <= 0 {
		rep.Threads = runtime.GOMAXPROCS(0) // the engine's own default (LoadOptions.Threads)
	}
	rep.Timing = "engine: prefill and decode durations as Generate measures them (decode = tokens after the first ÷ the time after it), TTFT from the call to the first token"
	return rep
}

// stepBytes is the mean over a run's decode steps of what each read: the
// first generated token comes out of prefill, so the steps are the
// forward passes of tokens 1 … gen−1, at cache sizes prompt … prompt+gen−2.
func stepBytes(roof engine.Roofline, prompt, gen int) (weights, kv float64) {
	steps := max(gen-1, 1)
	for j := range steps {
		w, k := roof.DecodeBytes(prompt + j)
		weights += float64(w) / float64(steps)
		kv += float64(k) / float64(steps)
	}
	return weights, kv
}

// check refuses options no benchmark can run with (the command checks its
// flags first, with their names; this guards other callers).
func (o Options) check() error {
	if o.Runs < 1 || o.PromptTokens < 1 || o.GenTokens < 2 || o.Threads < 0 || o.Context < 0 {
		return errkind.Errorf(errkind.Usage, "bench needs at least 1 run, 1 prompt token and 2 generated tokens (got %d runs, %d, %d)", o.Runs, o.PromptTokens, o.GenTokens)
	}
	return nil
}

// usable refuses a run whose decode cannot be timed: a model that ends its
// answer after one token leaves no decode step.
func (r run) usable(i int) error {
	if r.gen < 2 || r.decodeTPS <= 0 {
		return errkind.Errorf(errkind.Input, "run %d: the model ended its answer after %d token(s), so there is no decode to time; a model that stops at once on a run of repeated words cannot be benchmarked this way", i, r.gen)
	}
	return nil
}

// line is a run's figures for people.
func (r run) line(i, n int) string {
	return fmt.Sprintf("run %d/%d: prefill %.1f tok/s (%d tokens), decode %.1f tok/s (%d tokens), TTFT %.1f ms", i, n, r.prefillTPS, r.prompt, r.decodeTPS, r.gen, r.ttftMS)
}

// summarize reduces the runs to the report's figures.
func summarize(runs []run) *Report {
	pick := func(f func(run) float64) []float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return v
	}
	rep := &Report{Runs: len(runs),
		PrefillTPS: stat(pick(func(r run) float64 { return r.prefillTPS })),
		DecodeTPS:  stat(pick(func(r run) float64 { return r.decodeTPS })),
		TTFTMS:     stat(pick(func(r run) float64 { return r.ttftMS })),
	}
	rep.PromptTokens = int(stat(pick(func(r run) float64 { return float64(r.prompt) })).Median)
	rep.GenTokens = int(stat(pick(func(r run) float64 { return float64(r.gen) })).Min)
	if runs[0].readBps > 0 {
		weights := stat(pick(func(r run) float64 { return r.weights })).Median
		kv := stat(pick(func(r run) float64 { return r.kv })).Median
		bw := stat(pick(func(r run) float64 { return r.readBps })).Median
		ratio := stat(pick(func(r run) float64 { return r.decodeTPS * (r.weights + r.kv) / r.readBps })).Median
		w, k := int64(weights+0.5), int64(kv+0.5)
		total := w + k
		gbs, roofTPS := bw/1e9, bw/float64(total)
		rep.WeightBytesPerToken, rep.KVBytesPerToken, rep.BytesPerToken = &w, &k, &total
		rep.ReadGBs, rep.RooflineRatio, rep.RooflineTPS = &gbs, &ratio, &roofTPS
	}
	rep.LoadAverage = loadAverage()
	return rep
}

// stat is v's median (the mean of the middle two for an even count),
// minimum and maximum.
func stat(v []float64) Stat {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Stat{Median: med, Min: s[0], Max: s[n-1]}
}

// load opens the model at path on the CPU engine, with Start and Done
// events around it.
func load(ctx context.Context, path string, o Options) (engine.Model, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errkind.Errorf(errkind.Input, "%s: no such file or directory (give a checkpoint directory, a .gguf or .h1b file, or a Hub id ORG/NAME)", path)
		}
		return nil, errkind.Wrap(errkind.Input, err)
	}
	o.Progress.Emit(progress.Event{Event: progress.Start, Step: "load"})
	start := time.Now()
	m, err := cpu.New().Load(ctx, path, engine.LoadOptions{ContextLength: o.Context, Threads: o.Threads, Mmap: o.Mmap, Head: o.Head})
	if err != nil {
		if errkind.Of(err) == errkind.None && ctx.Err() == nil {
			err = errkind.Wrap(errkind.Input, err)
		}
		o.Progress.Emit(progress.Event{Event: progress.Error, Step: "load", Err: err})
		return nil, err
	}
	o.Progress.Emit(progress.Event{Event: progress.Done, Step: "load", DurationMS: time.Since(start).Milliseconds()})
	return m, nil
}

// loadAverage is the first three fields of /proc/loadavg ("" elsewhere):
// on a shared machine the rates depend on it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
