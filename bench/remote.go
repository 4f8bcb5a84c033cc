package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/upstream"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

// Remote is a running server to benchmark instead of a model file.
type Remote struct {
	URL    string // base URL, with or without /v1
	Model  string // the name the server knows the model by
	API    string // APIOpenAI, APIOllama, or "" to detect
	APIKey string // sent as Authorization: Bearer
}

// The protocols a server is benchmarked through.
const (
	APIOpenAI = "openai" // streamed /v1/chat/completions (engine/upstream)
	APIOllama = "ollama" // streamed /api/generate, raw (api.Client)
)

// Timing notes, as Report.Timing gives them.
const (
	timingOllama = "server: prompt_eval_count/prompt_eval_duration and eval_count/eval_duration; TTFT client-side, from the request to the first streamed token"
	timingOpenAI = "client-side stream timing: TTFT to the first streamed token, prefill = prompt tokens ÷ TTFT, decode = tokens after the first ÷ the time after it; token counts from usage"
)

// probeTimeout bounds the protocol probe: a server is either up or not.
const probeTimeout = 10 * time.Second

// RunRemote benchmarks r's model as Run does a local one, through the
// server's streaming API: one warm-up request (which also loads the model
// on a server that loads on demand), then o.Runs greedy requests of
// PromptText(i, o.PromptTokens) for o.GenTokens tokens. The memory
// figures stay null. Threads, Context, Mmap and Head are the server's
// business and are not read.
func RunRemote(ctx context.Context, r Remote, o Options) (*Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if r.Model == "" {
		return nil, errkind.Errorf(errkind.Usage, "benchmarking a server needs the model's name on it (--model)")
	}
	base := strings.TrimSuffix(strings.TrimRight(r.URL, "/"), "/v1")
	if !strings.Contains(base, "://") {
		base = "http://" + base // HOST:PORT, as EDGECTL_HOST takes it
	}
	proto, client, err := detect(ctx, base, r)
	if err != nil {
		return nil, err
	}
	var generate func(ctx context.Context, prompt string, n int) (run, string, error)
	switch proto {
	case APIOllama:
		generate = ollamaGenerate(client, r.Model)
	default:
		up := upstream.New([]upstream.Config{{Name: r.Model, URL: base, APIKey: r.APIKey}}, upstream.Options{StartTimeout: probeTimeout})
		o.Progress.Emit(progress.Event{Event: progress.Start, Step: "load"})
		start := time.Now()
		m, err := up.Load(ctx, upstream.Path(r.Model), engine.LoadOptions{})
		if err != nil {
			if ctx.Err() == nil {
				err = errkind.Wrap(errkind.Network, err) // it did not answer its health path
			}
			return nil, err
		}
		o.Progress.Emit(progress.Event{Event: progress.Done, Step: "load", DurationMS: time.Since(start).Milliseconds()})
		defer m.Close()
		sess, err := m.NewSession()
		if err != nil {
			return nil, err
		}
		generate = openAIGenerate(sess)
	}
	if _, _, err := generate(ctx, PromptText(0, o.PromptTokens), 2); err != nil {
		return nil, remoteErr(err, r)
	}
	var runs []run
	timing := ""
	for i := 1; i <= o.Runs; i++ {
		rr, t, err := generate(ctx, PromptText(i, o.PromptTokens), o.GenTokens)
		if err == nil {
			err = rr.usable(i)
		}
		if err != nil {
			return nil, remoteErr(err, r)
		}
		timing = t
		runs = append(runs, rr)
		o.Progress.Emit(progress.Event{Event: progress.Progress, Step: "bench", Done: int64(i), Total: int64(o.Runs), Unit: "runs", Message: rr.line(i, o.Runs)})
	}
	rep := summarize(runs)
	rep.Model, rep.Engine, rep.URL, rep.Timing = r.Model, proto, r.URL, timing
	if client != nil {
		if show, err := client.Show(ctx, &api.ShowRequest{Model: r.Model}); err == nil {
			rep.Format, rep.Quantization = show.Details.Format, show.Details.QuantizationLevel
		}
	}
	return rep, nil
}

// detect picks the protocol: r.API when given, else Ollama's when the
// server answers GET /api/version (edgectl serve, Ollama), else OpenAI's.
// The probe also tells an unreachable server at once. A base URL with a
// path the Ollama client cannot take is OpenAI's.
func detect(ctx context.Context, base string, r Remote) (string, *api.Client, error) {
	if r.API != "" && r.API != APIOpenAI && r.API != APIOllama {
		return "", nil, errkind.Errorf(errkind.Usage, "--api %q: want openai or ollama (or leave it out to detect)", r.API)
	}
	c, err := api.NewClient(withPort(base), r.APIKey)
	if err != nil {
		if r.API == APIOllama {
			return "", nil, errkind.Errorf(errkind.Usage, "--url %s: %v", r.URL, err)
		}
		return APIOpenAI, nil, nil
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err = c.Version(pctx)
	var se *api.StatusError
	switch {
	case err == nil:
	case errors.As(err, &se) && se.StatusCode != http.StatusUnauthorized && se.StatusCode != http.StatusForbidden:
		// It answered, and not as Ollama does.
		if r.API == "" {
			return APIOpenAI, nil, nil
		}
	case pctx.Err() != nil && ctx.Err() == nil:
		return "", nil, errkind.Errorf(errkind.Network, "%s did not answer GET /api/version within %v: is the server running, and --url right?", r.URL, probeTimeout)
	default:
		var ue *url.Error
		if errors.As(err, &ue) && ctx.Err() == nil {
			return "", nil, errkind.Errorf(errkind.Network, "%s: cannot connect (%v): is the server running, and --url right?", r.URL, ue.Err)
		}
		return "", nil, remoteErr(err, r)
	}
	if r.API == APIOpenAI {
		return APIOpenAI, nil, nil
	}
	return APIOllama, c, nil
}

// withPort gives base the port its scheme implies when it names none: the
// Ollama client, given a bare host, would assume Ollama's own port.
func withPort(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || u.Port() != "" {
		return base
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	u.Host = net.JoinHostPort(u.Hostname(), port)
	return u.String()
}

// ollamaGenerate streams /api/generate (raw: no template) and reads the
// rates from the final line's counters, as `ollama run --verbose` does;
// where the server sends no durations, from the stream's own timing.
func ollamaGenerate(c *api.Client, model string) func(context.Context, string, int) (run, string, error) {
	return func(ctx context.Context, prompt string, n int) (run, string, error) {
		zero := 0.0
		req := &api.GenerateRequest{Model: model, Prompt: prompt, Raw: true, Options: &api.Options{Temperature: &zero, NumPredict: &n}}
		var first time.Time
		var final *api.Timings
		start := time.Now()
		err := c.Generate(ctx, req, func(g api.GenerateResponse) error {
			if first.IsZero() && (g.Response != "" || g.Done) {
				first = time.Now()
			}
			if g.Done {
				final = &g.Timings
			}
			return nil
		})
		end := time.Now()
		if err != nil {
			return run{}, "", err
		}
		if final == nil {
			return run{}, "", errors.New("the server closed the stream before the answer was done")
		}
		r := run{prompt: final.PromptEvalCount, gen: final.EvalCount, ttftMS: float64(first.Sub(start).Microseconds()) / 1000}
		timing := timingOllama
		if d := time.Duration(final.PromptEvalDuration); d > 0 {
			r.prefillTPS = float64(r.prompt) / d.Seconds()
		} else if r.ttftMS > 0 {
			r.prefillTPS, timing = float64(r.prompt)/(r.ttftMS/1000), timingOpenAI
		}
		if d := time.Duration(final.EvalDuration); d > 0 {
			r.decodeTPS = float64(r.gen) / d.Seconds()
		} else if d := end.Sub(first); d > 0 && r.gen > 1 {
			r.decodeTPS, timing = float64(r.gen-1)/d.Seconds(), timingOpenAI
		}
		return r, timing, nil
	}
}

// openAIGenerate runs a request through the upstream lane's session, which
// streams /v1/chat/completions and reads the vendors' own timings where
// they send them (llama-server's timings, FastFlowLM's usage durations).
func openAIGenerate(sess engine.Session) func(context.Context, string, int) (run, string, error) {
	return func(ctx context.Context, prompt string, n int) (run, string, error) {
		zero := 0.0
		res, err := sess.Generate(ctx, engine.Request{Prompt: prompt, MaxTokens: n, Sampling: engine.Sampling{Temperature: &zero}},
			func(engine.Token) error { return nil })
		if err != nil {
			return run{}, "", err
		}
		r := run{prompt: res.PromptTokens, gen: res.CompletionTokens, ttftMS: float64(res.TTFT.Microseconds()) / 1000,
			prefillTPS: res.PrefillTPS(), decodeTPS: res.DecodeTPS()}
		timing := timingOpenAI
		switch {
		case res.Extra["cache_n"] != nil:
			timing = "server: llama-server's timings block (prompt_ms, predicted_ms); TTFT client-side"
		case res.Extra["upstream_tps"] != nil:
			timing = "server: FastFlowLM's usage durations (prefill_duration_ttft, decoding_duration); TTFT client-side"
		case res.Extra["token_count"] != nil:
			timing = timingOpenAI + " (the server sent no usage: tokens counted as streamed pieces)"
		}
		return r, timing, nil
	}
}

// remoteErr marks a server's failure with the kind that says what to do:
// unreachable (network), refused key (auth), unknown model (not found),
// overloaded (busy).
func remoteErr(err error, r Remote) error {
	if err == nil || errkind.Of(err) != errkind.None || errors.Is(err, context.Canceled) {
		return err
	}
	status := 0
	var se *api.StatusError
	var ue *upstream.Error
	switch {
	case errors.As(err, &se):
		status = se.StatusCode
	case errors.As(err, &ue):
		status = ue.Status
	}
	var ne *url.Error
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return errkind.Wrap(errkind.Auth, fmt.Errorf("%s: %w (give the server's key with --api-key or EDGECTL_API_KEY)", r.URL, err))
	case status == http.StatusNotFound:
		return errkind.Wrap(errkind.NotFound, fmt.Errorf("%s: %w (is %q the model's name on that server?)", r.URL, err, r.Model))
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		return errkind.Wrap(errkind.Busy, err)
	case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded):
		return errkind.Wrap(errkind.Network, err)
	}
	return err
}
