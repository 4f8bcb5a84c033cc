package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/envconfig"
)

func init() { register(newRunCmd) }

type runOptions struct {
	Model  string
	Prompt string
	HasArg bool

	System        string
	Raw           bool
	MaxTokens     int
	Temperature   float64
	TempSet       bool
	TopK          int
	TopP          float64
	MinP          float64
	RepeatPenalty float64
	Seed          int64
	Mmap          bool
	Head          string
	SeedSet       bool
	Stop          []string
	Context       int
	Threads       int

	Host    string // --host: answer through a running server (run_host.go)
	APIKey  string
	changed func(flag string) bool
}

func newRunCmd(io *cli.IO) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run MODEL [PROMPT]",
		Short: "Run a model on the CPU: one prompt, or an interactive chat",
		Long: `Run loads MODEL (a Hugging Face checkpoint directory, a .gguf or a .h1b file,
or a Hub id ORG/NAME[@REV]: taken from the Hugging Face cache, pulled into it
when missing unless HF_HUB_OFFLINE=1) into edgectl's built-in CPU engine and
generates text, streaming it to stdout.
With PROMPT it answers once; without, it reads one user turn per line from
stdin and keeps the conversation. Models with a chat template are prompted
through it (--raw sends the text as is). Timing goes to stderr at the end.

With --host URL (or EDGECTL_HOST set, as ollama run reads OLLAMA_HOST) MODEL
is a name a running edgectl serve (or Ollama-compatible server) knows, and
the answer comes from there, printed the same way; --threads, --mmap and
--head are the server's settings and are refused.`,
		Example: `  edgectl run ./tinystories "Once upon a time" -n 100
  edgectl run Qwen/Qwen3-0.6B "Why is the sky blue?"
  edgectl run model.gguf --temperature 0.7 --seed 1
  echo "What is 2+2?" | edgectl run ./qwen3 --json
  edgectl run --host 192.168.1.20 qwen3 "Why is the sky blue?"`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Model = args[0]
			if len(args) == 2 {
				opts.Prompt, opts.HasArg = args[1], true
			}
			opts.changed = cmd.Flags().Changed
			opts.SeedSet = opts.changed("seed")
			opts.TempSet = opts.changed("temperature")
			return runRun(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.System, "system", "", "system message for chat models")
	f.BoolVar(&opts.Raw, "raw", false, "send the prompt as plain text, without the chat template")
	f.IntVarP(&opts.MaxTokens, "max-tokens", "n", 256, "stop after this many tokens (0: until EOS or the context is full)")
	f.Float64Var(&opts.Temperature, "temperature", 0.8, "sampling temperature; 0 is greedy")
	f.IntVar(&opts.TopK, "top-k", 40, "keep the k most likely tokens (0: off)")
	f.Float64Var(&opts.TopP, "top-p", 0.95, "nucleus sampling threshold (1: off)")
	f.Float64Var(&opts.MinP, "min-p", 0.05, "drop tokens below this fraction of the best one's probability (0: off)")
	f.Float64Var(&opts.RepeatPenalty, "repeat-penalty", 1.0, "penalty for tokens of the last 64 (1: off)")
	f.Int64Var(&opts.Seed, "seed", 0, "random seed (default: random)")
	f.StringArrayVar(&opts.Stop, "stop", nil, "stop when this string is generated (repeatable)")
	f.IntVar(&opts.Context, "ctx", 0, "context window in tokens (0: the model's own, bounded by memory)")
	f.IntVar(&opts.Threads, "threads", 0, "CPU threads (0: all cores)")
	f.BoolVar(&opts.Mmap, "mmap", false, "serve weights from the file mapping instead of copying them into memory")
	f.StringVar(&opts.Head, "head", "", "LM head in memory: q4x, q3x, q2x, q4, q8 or float (default: q4x for ternary models)")
	f.StringVar(&opts.Host, "host", "", "answer through the server at this address: HOST, HOST:PORT, :PORT or http(s)://HOST:PORT (env EDGECTL_HOST)")
	f.StringVar(&opts.APIKey, "api-key", "", "with --host: the server's API key (env EDGECTL_API_KEY)")
	return cmd
}

// runStats is the --json document and the stderr summary.
type runStats struct {
	Model            string  `json:"model"`
	Text             string  `json:"text"`
	FinishReason     string  `json:"finish_reason"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	TTFTMillis       float64 `json:"ttft_ms"`
	PrefillTPS       float64 `json:"prefill_tokens_per_second"`
	DecodeTPS        float64 `json:"decode_tokens_per_second"`
}

func runRun(ctx context.Context, io *cli.IO, opts *runOptions) error {
	if opts.Temperature < 0 {
		return usagef("--temperature must be ≥ 0 (got %g)", opts.Temperature)
	}
	if opts.MaxTokens < 0 {
		return usagef("--max-tokens must be ≥ 0 (got %d)", opts.MaxTokens)
	}
	if opts.Context < 0 {
		return usagef("--ctx must be ≥ 0 (got %d)", opts.Context)
	}
	if opts.changed == nil {
		opts.changed = func(string) bool { return false }
	}
	if opts.Host != "" || envconfig.Host.IsSet() {
		return runOnHost(ctx, io, opts)
	}
	if opts.changed("api-key") {
		return usagef("--api-key goes with --host: a local run talks to no server")
	}
	path, err := resolveModel(ctx, io, opts.Model) // a Hub id: from the HF cache, pulled when missing
	if err != nil {
		return err
	}
	loadStart := time.Now()
	m, err := cpu.New().Load(ctx, path, engine.LoadOptions{ContextLength: opts.Context, Threads: opts.Threads, Mmap: opts.Mmap, Head: opts.Head})
	if err != nil {
		return err
	}
	defer m.Close()
	info := m.Info()
	if path != opts.Model {
		info.Name = opts.Model // the Hub id, not the snapshot's commit hash
	}
	io.Logf("loaded %s (%s %s, %s, context %d tokens) in %s", info.Name, info.Architecture, info.Quantization, info.Format,
		info.ContextLength, time.Since(loadStart).Round(time.Millisecond))
	sess, err := m.NewSession()
	if err != nil {
		return err
	}
	defer sess.Close()

	smp := engine.Sampling{TopK: opts.TopK, TopP: opts.TopP, MinP: opts.MinP, RepeatPenalty: opts.RepeatPenalty}
	if opts.TempSet {
		smp.Temperature = &opts.Temperature
	}
	if opts.SeedSet {
		smp.Seed = &opts.Seed
	}
	chat := info.ChatTemplate != "" && !opts.Raw
	return converse(ctx, io, opts, info.Name, chat, func(ctx context.Context, t runTurn, emit func(string)) (runStats, error) {
		req := engine.Request{MaxTokens: opts.MaxTokens, Stop: opts.Stop, Sampling: smp, Prompt: t.Prompt}
		if chat {
			req.Messages, req.AddGenerationPrompt = t.Messages, true
		}
		res, err := sess.Generate(ctx, req, func(tok engine.Token) error {
			emit(tok.Text)
			return nil
		})
		return runStats{FinishReason: res.FinishReason, PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens,
			TTFTMillis: float64(res.TTFT.Microseconds()) / 1000, PrefillTPS: res.PrefillTPS(), DecodeTPS: res.DecodeTPS()}, err
	})
}

// runTurn is what one answer is asked for: the conversation so far,
// ending with the user's turn (chat), or the user's text as a plain
// prompt.
type runTurn struct {
	Messages []engine.Message
	Prompt   string
}

// answerFunc generates one answer, handing each piece of text to emit as
// it comes. Its stats need not carry Model and Text (converse fills them);
// on an error CompletionTokens counts what was generated.
type answerFunc func(ctx context.Context, t runTurn, emit func(string)) (runStats, error)

// converse answers the PROMPT argument, or one user turn per line of stdin,
// through answer: the one home of what run prints, so a local run and
// --host print alike.
func converse(ctx context.Context, io *cli.IO, opts *runOptions, model string, chat bool, answer answerFunc) error {
	var history []engine.Message
	if opts.System != "" {
		history = append(history, engine.Message{Role: "system", Content: opts.System})
	}
	turn := func(text string) (runStats, error) {
		t := runTurn{Prompt: text}
		if chat {
			history = append(history, engine.Message{Role: "user", Content: text})
			t = runTurn{Messages: history}
		}
		var out strings.Builder
		st, err := answer(ctx, t, func(piece string) {
			out.WriteString(piece)
			if !io.JSON {
				fmt.Fprint(io.Out, piece)
			}
		})
		if !io.JSON && out.Len() > 0 {
			fmt.Fprintln(io.Out)
		}
		st.Model, st.Text = model, out.String()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return st, fmt.Errorf("interrupted after %d tokens", st.CompletionTokens)
			}
			return st, err
		}
		if chat {
			history = append(history, engine.Message{Role: "assistant", Content: out.String()})
		}
		io.Logf("%d prompt tokens at %.1f tok/s, %d generated at %.1f tok/s, time to first token %.0f ms (%s)",
			st.PromptTokens, st.PrefillTPS, st.CompletionTokens, st.DecodeTPS, st.TTFTMillis, st.FinishReason)
		return st, nil
	}

	if opts.HasArg {
		st, err := turn(opts.Prompt)
		if err != nil {
			return err
		}
		if io.JSON {
			return io.WriteJSON(st)
		}
		return nil
	}
	// Interactive: one user turn per line of stdin.
	sc := bufio.NewScanner(io.In)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	if io.Interactive {
		fmt.Fprint(io.ErrOut, "> ")
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if line == "/exit" || line == "/bye" {
			break
		}
		st, err := turn(line)
		if err != nil {
			return err
		}
		if io.JSON {
			io.Event(st)
		}
		if io.Interactive {
			fmt.Fprint(io.ErrOut, "> ")
		}
	}
	return sc.Err()
}
