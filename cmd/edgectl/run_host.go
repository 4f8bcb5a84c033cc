package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/envconfig"
	"github.com/edgectl/edgectl/internal/errkind"
)

// serverSettings are run's flags that set how a model is loaded: with
// --host the server has loaded it with its own (serve --config lanes.cpu.*).
var serverSettings = []string{"threads", "mmap", "head"}

// runOnHost is `run --host`: MODEL is a name the server knows, and each
// answer streams from its /api/chat (or /api/generate for plain text).
func runOnHost(ctx context.Context, io *cli.IO, opts *runOptions) error {
	for _, f := range serverSettings {
		if opts.changed(f) {
			return usagef("--%s cannot be used with --host: the server loads the model with its own setting (serve --config lanes.cpu.%s); leave it out", f, f)
		}
	}
	key := opts.APIKey
	if !opts.changed("api-key") {
		key = envconfig.APIKey.Get()
	}
	c, err := api.NewClient(opts.Host, key)
	if err != nil {
		if opts.Host != "" {
			return usagef("--host %v", err)
		}
		return errkind.Wrap(errkind.Usage, err)
	}

	// Load the model first, as ollama run does: the load time is reported
	// apart from the answer, and /api/show then tells whether the loaded
	// model has a chat template.
	var load api.ChatResponse
	if err := c.Chat(ctx, &api.ChatRequest{Model: opts.Model}, func(r api.ChatResponse) error { load = r; return nil }); err != nil {
		if opts.Host == "" {
			err = fmt.Errorf("%w (EDGECTL_HOST is set, so run asks the server at %s; unset it to run MODEL on this machine)", err, c.URL())
		}
		return err
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: opts.Model})
	if err != nil {
		return err
	}
	arch, _ := show.ModelInfo["general.architecture"].(string)
	ctxLen, _ := show.ModelInfo[arch+".context_length"].(float64)
	took := "already in memory"
	if load.LoadDuration > 0 {
		took = "in " + time.Duration(load.LoadDuration).Round(time.Millisecond).String()
	}
	io.Logf("loaded %s (%s %s, %s, context %d tokens) %s on %s", opts.Model, arch, show.Details.QuantizationLevel, show.Details.Format,
		int(ctxLen), took, c.URL())

	// edgectl reports the template only while the model is loaded; one
	// unloaded meanwhile goes through chat, which the server renders with
	// the model's template or its plain fallback.
	chat := !opts.Raw && (show.Template != "" || show.ModelInfo["edgectl.loaded"] == false)
	o := hostOptions(opts)
	return converse(ctx, io, opts, opts.Model, chat, func(ctx context.Context, t runTurn, emit func(string)) (runStats, error) {
		var st runStats
		pieces, done := 0, false
		line := func(text string, final bool, reason string, tm api.Timings) {
			if text != "" {
				emit(text)
				pieces++
			}
			if final {
				st, done = hostStats(reason, tm), true
			}
		}
		var err error
		if chat {
			req := &api.ChatRequest{Model: opts.Model, Options: o}
			for _, m := range t.Messages {
				req.Messages = append(req.Messages, api.Message{Role: m.Role, Content: m.Content})
			}
			err = c.Chat(ctx, req, func(r api.ChatResponse) error {
				line(r.Message.Content, r.Done, r.DoneReason, r.Timings)
				return nil
			})
		} else {
			err = c.Generate(ctx, &api.GenerateRequest{Model: opts.Model, Prompt: t.Prompt, Raw: true, Options: o}, func(r api.GenerateResponse) error {
				line(r.Response, r.Done, r.DoneReason, r.Timings)
				return nil
			})
		}
		if err == nil && !done {
			err = errors.New("the server closed the stream before the answer was done")
		}
		if err != nil {
			st.CompletionTokens = pieces // each line is one token's text on edgectl
		}
		return st, err
	})
}

// hostOptions maps run's sampling flags onto Ollama's options. The flags
// a local run always applies are always sent, so the server samples as
// the local engine would; temperature and seed only when given, as
// locally.
func hostOptions(opts *runOptions) *api.Options {
	o := &api.Options{TopK: &opts.TopK, TopP: &opts.TopP, MinP: &opts.MinP, RepeatPenalty: &opts.RepeatPenalty, Stop: opts.Stop}
	if opts.TempSet {
		o.Temperature = &opts.Temperature
	}
	if opts.SeedSet {
		o.Seed = &opts.Seed
	}
	n := -1 // Ollama's "no limit", as --max-tokens 0
	if opts.MaxTokens > 0 {
		n = opts.MaxTokens
	}
	o.NumPredict = &n
	if opts.Context > 0 {
		o.NumCtx = &opts.Context
	}
	return o
}

// hostStats reads the final line's counts and timings: edgectl's metrics
// block where the server sends one, else Ollama's durations.
func hostStats(reason string, t api.Timings) runStats {
	st := runStats{FinishReason: reason, PromptTokens: t.PromptEvalCount, CompletionTokens: t.EvalCount}
	if m := t.Metrics; m != nil {
		st.TTFTMillis, st.PrefillTPS, st.DecodeTPS = m.TTFTMS, m.PrefillTPS, m.TPS
		return st
	}
	prefill, decode := time.Duration(t.PromptEvalDuration), time.Duration(t.EvalDuration)
	st.TTFTMillis = float64(prefill.Microseconds()) / 1000
	if prefill > 0 {
		st.PrefillTPS = float64(t.PromptEvalCount) / prefill.Seconds()
	}
	if decode > 0 {
		st.DecodeTPS = float64(t.EvalCount) / decode.Seconds()
	}
	return st
}
