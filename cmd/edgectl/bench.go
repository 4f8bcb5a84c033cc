package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/bench"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/envconfig"
	"github.com/edgectl/edgectl/internal/progress"
)

func init() { register(newBenchCmd) }

type benchOptions struct {
	Model        string
	Compare      []string // more than one MODEL: measured in turns (bench.Compare)
	Runs         int
	PromptTokens int
	GenTokens    int
	Threads      int
	Context      int
	Mmap         bool
	Head         string
	Perplexity   string

	URL     string // --url: a running server instead of a model file
	Name    string // --model: the model's name on that server
	API     string
	APIKey  string
	changed func(flag string) bool
}

// localOnly are bench's flags that set how a model is loaded here: a
// server loads its models with its own settings.
var localOnly = []string{"threads", "ctx", "mmap", "head", "perplexity"}

func newBenchCmd(io *cli.IO) *cobra.Command {
	opts := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench MODEL [MODEL...] | bench --url URL --model NAME",
		Short: "Measure prefill and decode speed, time to first token, the memory roofline, or perplexity",
		Long: `Bench loads MODEL (a checkpoint directory, a .gguf or .h1b file, or a Hub id)
into the CPU engine and, after one warm-up run, times --runs runs of a
--prompt-tokens prompt and --gen-tokens greedy tokens, each from an empty
cache: prefill tok/s, decode tok/s and the time to first token (median, min,
max). It also reports the bytes one decode step reads (every weight, plus
the KV rows of the positions cached so far), the machine's read bandwidth
measured before each run on --threads cores, and the roofline ratio: decode
tok/s × bytes per token ÷ read bandwidth (1.0: decode runs at the speed of
memory).

With several MODELs it loads them all and measures them in turns, one
run of each per round with the first of a round rotating, so that a shared
machine's changing state (memory bandwidth, other load) meets them all
alike; it reports each one's figures and its decode and prefill rates over
the first MODEL's, taken within each round.

With --url URL --model NAME it benchmarks a running OpenAI- or Ollama-
compatible server instead (edgectl serve, Ollama, llama-server, FastFlowLM,
an NPU lane on a board), detecting the protocol unless --api says it; the
memory figures are then null. With --perplexity FILE it reports the
perplexity of FILE's text instead of timing (docs/engine.md, "edgectl bench",
states the rules).`,
		Example: `  edgectl bench model.gguf
  edgectl bench ./bitnet.h1b --runs 5 --prompt-tokens 256 --gen-tokens 128 --json
  edgectl bench model-tq2_0.gguf model-sherry.h1b --runs 8
  edgectl bench --url http://board.lan:11434 --model qwen3
  edgectl bench --url http://127.0.0.1:8080 --api openai --model bitnet
  edgectl bench ./tinystories --perplexity story.txt --ctx 512`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Model = args[0]
			}
			if len(args) > 1 {
				opts.Compare = args
			}
			opts.changed = cmd.Flags().Changed
			return runBench(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Runs, "runs", 3, "measured runs, after one warm-up run")
	f.IntVar(&opts.PromptTokens, "prompt-tokens", 128, "prompt length in tokens (exact for a local model, approximate on a server)")
	f.IntVar(&opts.GenTokens, "gen-tokens", 64, "tokens generated greedily per run (at least 2)")
	f.IntVar(&opts.Threads, "threads", 0, "CPU threads for the engine and the bandwidth probe (0: all cores)")
	f.IntVar(&opts.Context, "ctx", 0, "context window in tokens (0: the model's own, bounded by memory); perplexity windows are this long")
	f.BoolVar(&opts.Mmap, "mmap", false, "serve weights from the file mapping instead of copying them into memory")
	f.StringVar(&opts.Head, "head", "", "LM head in memory: q4x, q3x, q2x, q4, q8 or float (default: q4x for ternary models)")
	f.StringVar(&opts.Perplexity, "perplexity", "", "report the perplexity of this text file instead of timing")
	f.StringVar(&opts.URL, "url", "", "benchmark the server at this base URL instead of a model file")
	f.StringVar(&opts.Name, "model", "", "with --url: the model's name on the server")
	f.StringVar(&opts.API, "api", "", "with --url: the server's protocol, openai or ollama (default: detected)")
	f.StringVar(&opts.APIKey, "api-key", "", "with --url: the server's API key (env EDGECTL_API_KEY)")
	return cmd
}

func runBench(ctx context.Context, io *cli.IO, opts *benchOptions) error {
	if opts.changed == nil {
		opts.changed = func(string) bool { return false }
	}
	switch {
	case opts.Runs < 1:
		return usagef("--runs must be at least 1 (got %d)", opts.Runs)
	case opts.PromptTokens < 1:
		return usagef("--prompt-tokens must be at least 1 (got %d)", opts.PromptTokens)
	case opts.GenTokens < 2:
		return usagef("--gen-tokens must be at least 2: the first token comes out of prefill, so decode is timed from the second (got %d)", opts.GenTokens)
	case opts.Threads < 0:
		return usagef("--threads must be ≥ 0 (got %d)", opts.Threads)
	case opts.Context < 0:
		return usagef("--ctx must be ≥ 0 (got %d)", opts.Context)
	}
	view := newEventView(io, false)
	defer view.finish()
	o := bench.Options{Runs: opts.Runs, PromptTokens: opts.PromptTokens, GenTokens: opts.GenTokens, Threads: opts.Threads,
		Context: opts.Context, Mmap: opts.Mmap, Head: opts.Head,
		Progress: func(e progress.Event) {
			if e.Event == progress.Progress { // one line per run or window, on a terminal only
				if io.Interactive {
					io.Logf("  %s", e.Message)
				}
				return
			}
			view.on(e)
		}}

	if len(opts.Compare) > 0 {
		return runBenchCompare(ctx, io, opts, o)
	}
	if opts.URL != "" {
		for _, f := range localOnly {
			if opts.changed(f) {
				return usagef("--%s cannot be used with --url: the server loads and runs the model with its own settings; leave it out", f)
			}
		}
		name := opts.Name
		if name == "" {
			name = opts.Model
		} else if opts.Model != "" && opts.Model != name {
			return usagef("give the server's model name once: MODEL %q or --model %q", opts.Model, name)
		}
		if name == "" {
			return usagef("--url needs the model's name on the server: --model NAME")
		}
		key := opts.APIKey
		if !opts.changed("api-key") {
			key = envconfig.APIKey.Get()
		}
		rep, err := bench.RunRemote(ctx, bench.Remote{URL: opts.URL, Model: name, API: opts.API, APIKey: key}, o)
		if err != nil {
			return err
		}
		return printBench(io, rep)
	}
	for _, f := range []string{"model", "api", "api-key"} {
		if opts.changed(f) {
			return usagef("--%s goes with --url; for a model file give its path as MODEL", f)
		}
	}
	if opts.Model == "" {
		return usagef("give MODEL (a checkpoint directory, a .gguf or .h1b file, or a Hub id), or --url URL --model NAME")
	}
	path, err := resolveModel(ctx, io, opts.Model) // a Hub id: from the HF cache, pulled when missing
	if err != nil {
		return err
	}
	if opts.Perplexity != "" {
		rep, err := bench.Perplexity(ctx, path, opts.Perplexity, o)
		if err != nil {
			return err
		}
		if io.JSON {
			return io.WriteJSON(rep)
		}
		io.Printf("%s: perplexity %.4f over %d tokens of %s (%d windows of %d tokens, mean NLL %.4f nats, %.1f s)\n",
			opts.Model, rep.Perplexity, rep.Tokens, rep.File, rep.Windows, rep.Context, rep.MeanNLL, rep.Seconds)
		return nil
	}
	rep, err := bench.Run(ctx, path, o)
	if err != nil {
		return err
	}
	if path != opts.Model {
		rep.Model = opts.Model // the Hub id, not the snapshot's commit hash
	}
	return printBench(io, rep)
}

// runBenchCompare measures several models in turns (bench.Compare).
func runBenchCompare(ctx context.Context, io *cli.IO, opts *benchOptions, o bench.Options) error {
	for _, f := range []string{"url", "model", "api", "api-key", "perplexity"} {
		if opts.changed(f) {
			return usagef("--%s takes one model; several MODELs are compared by timing them in turns", f)
		}
	}
	paths := make([]string, len(opts.Compare))
	for i, m := range opts.Compare {
		p, err := resolveModel(ctx, io, m)
		if err != nil {
			return err
		}
		paths[i] = p
	}
	c, err := bench.Compare(ctx, paths, o)
	if err != nil {
		return err
	}
	for i, r := range c.Reports {
		r.Model = opts.Compare[i] // as given: two files of one model share its name
	}
	if io.JSON {
		return io.WriteJSON(c)
	}
	r0 := c.Reports[0]
	io.Printf("%d models in turns on %d threads: %d rounds of %d prompt + %d generated tokens; ratios to the first within each round\n", len(c.Reports), r0.Threads, r0.Runs, r0.PromptTokens, r0.GenTokens)
	w := len("model")
	for _, r := range c.Reports {
		w = max(w, len(r.Model))
	}
	io.Printf("%-*s %12s %-18s %12s %-18s %9s %9s\n", w, "model", "decode tok/s", " × first", "prefill tok/s", " × first", "roofline", "MB/token")
	for i, r := range c.Reports {
		roof, mb := "-", "-"
		if r.RooflineRatio != nil {
			roof, mb = fmt.Sprintf("%.2f", *r.RooflineRatio), fmt.Sprintf("%.4g", float64(*r.BytesPerToken)/1e6)
		}
		io.Printf("%-*s %12.1f %-18s %12.1f %-18s %9s %9s\n", w, r.Model, r.DecodeTPS.Median, " "+ratioText(c.DecodeRatio[i]), r.PrefillTPS.Median, " "+ratioText(c.PrefillRatio[i]), roof, mb)
	}
	if r0.ReadGBs != nil {
		io.Printf("read bandwidth probed before the first model's runs: median %.1f GB/s (every model's in --json)\n", *r0.ReadGBs)
	}
	return nil
}

// ratioText is a ratio's median with its range over the rounds.
func ratioText(s bench.Stat) string {
	if s.Min == s.Max {
		return fmt.Sprintf("%.2f", s.Median)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

// printBench writes the report: one JSON object, or a small table.
func printBench(io *cli.IO, r *bench.Report) error {
	if io.JSON {
		return io.WriteJSON(r)
	}
	where := r.Engine
	if r.URL != "" {
		where += " at " + r.URL
	}
	if r.Threads > 0 {
		where += fmt.Sprintf(", %d threads", r.Threads)
	}
	what := ""
	if r.Format != "" || r.Quantization != "" {
		what = fmt.Sprintf(" (%s %s)", r.Format, r.Quantization)
	}
	io.Printf("%s%s on %s: %d runs of %d prompt + %d generated tokens\n", r.Model, what, where, r.Runs, r.PromptTokens, r.GenTokens)
	io.Printf("%-12s %10s %10s %10s\n", "", "median", "min", "max")
	for _, row := range []struct {
		name string
		s    bench.Stat
		unit string
	}{{"prefill", r.PrefillTPS, "tok/s"}, {"decode", r.DecodeTPS, "tok/s"}, {"TTFT", r.TTFTMS, "ms"}} {
		io.Printf("%-12s %10.1f %10.1f %10.1f  %s\n", row.name, row.s.Median, row.s.Min, row.s.Max, row.unit)
	}
	if r.BytesPerToken != nil {
		mb := func(n int64) float64 { return float64(n) / 1e6 } // decimal, as the GB/s beside it
		io.Printf("%-12s %.1f MB (weights %.1f MB + KV %.2f MB)\n", "bytes/token", mb(*r.BytesPerToken), mb(*r.WeightBytesPerToken), mb(*r.KVBytesPerToken))
		io.Printf("%-12s %.1f GB/s on %d threads\n", "read", *r.ReadGBs, r.Threads)
		io.Printf("%-12s %.2f of %.1f tok/s (decode × bytes/token ÷ read bandwidth)\n", "roofline", *r.RooflineRatio, *r.RooflineTPS)
	}
	io.Printf("%-12s %s\n", "timing", r.Timing)
	if r.LoadAverage != "" {
		io.Printf("%-12s %s\n", "load", r.LoadAverage)
	}
	return nil
}
