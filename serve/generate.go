package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/upstream"
)

// errAbandoned stops a backend that kept emitting after the watchdog gave
// up on it.
var errAbandoned = errors.New("request abandoned")

// prepare adapts a request to the loaded model: chat for a model with no
// chat template goes through a plain fallback template on lanes that
// tokenize themselves (the CPU lane).
func prepare(l *Lease, req engine.Request) engine.Request {
	if !l.ChatFallback || len(req.Messages) == 0 || l.Model.Info().ChatTemplate != "" {
		return req
	}
	req.Prompt = fallbackTemplate(req.Messages, req.AddGenerationPrompt)
	req.Messages = nil
	return req
}

// fallbackTemplate renders "Role: text" lines. A single user message is
// sent as it is, so base models (no template) continue the user's text.
func fallbackTemplate(msgs []engine.Message, addGen bool) string {
	if len(msgs) == 1 && msgs[0].Role == "user" {
		return msgs[0].Content
	}
	var b strings.Builder
	for _, m := range msgs {
		role := m.Role
		if role != "" {
			role = strings.ToUpper(role[:1]) + role[1:]
		}
		fmt.Fprintf(&b, "%s: %s\n", role, m.Content)
	}
	if addGen {
		b.WriteString("Assistant:")
	}
	return b.String()
}

// run generates on the lease's model, calling emit with each piece of text
// (and the log-probabilities, tool calls and an upstream's thinking that
// come with it; tokens with none of them are dropped).
// The watchdog kills the backend when no token arrives for opts.Watchdog
// (counted from the start, so it also bounds prefill); emit is never called
// after run returns.
func (s *Server) run(ctx context.Context, l *Lease, req engine.Request, emit func(engine.Token) error) (engine.Result, error) {
	sess, err := l.Model.NewSession()
	if err != nil {
		return engine.Result{}, err
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		last   atomic.Int64
		mu     sync.Mutex
		closed bool
	)
	last.Store(time.Now().UnixNano())
	wrapped := func(t engine.Token) error {
		last.Store(time.Now().UnixNano())
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return errAbandoned
		}
		if t.Text == "" && t.Reasoning == "" && len(t.Logprobs) == 0 && len(t.ToolCalls) == 0 {
			return nil
		}
		return emit(t)
	}
	type outcome struct {
		res engine.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := safeGenerate(gctx, sess, req, wrapped, s.opts.Logf)
		if errors.Is(err, ErrEnginePanic) {
			l.Discard("engine panic")
		}
		sess.Close()
		done <- outcome{res, err}
	}()
	abandon := func() {
		mu.Lock()
		closed = true
		mu.Unlock()
	}
	tick := min(max(s.opts.Watchdog/10, 10*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case o := <-done:
			abandon()
			if o.err != nil && ctx.Err() != nil {
				return o.res, ctx.Err()
			}
			return o.res, o.err
		case <-t.C:
			idle := time.Since(time.Unix(0, last.Load()))
			if idle < s.opts.Watchdog {
				continue
			}
			why := fmt.Sprintf("watchdog: no token for %v", idle.Round(time.Millisecond))
			s.opts.Logf("%s on %s (lane %s): killing and restarting it", why, l.r.entry.Name, l.Lane)
			abandon()
			l.Kill(why)
			cancel()
			select {
			case <-done:
			case <-time.After(s.opts.WatchdogGrace):
			}
			return engine.Result{}, fmt.Errorf("%w for %v: the %s lane was restarted; retry the request", ErrWatchdog, s.opts.Watchdog, l.Lane)
		}
	}
}

// record updates the per-model counters.
func (s *Server) record(e *Entry, res engine.Result) {
	s.metrics.generation(e.Name, res.PromptTokens, res.CompletionTokens, res.TTFT, res.PrefillDuration, res.DecodeDuration, res.DecodeTPS())
}

// httpStatus maps an error to the status a client should see.
func httpStatus(err error) int {
	var le *LoadError
	var ue *upstream.Error
	switch {
	case errors.Is(err, ErrQueueFull):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled):
		return 499 // client closed the request (nobody reads it)
	case errors.Is(err, engine.ErrContextFull), errors.Is(err, engine.ErrInvalidRequest):
		return http.StatusBadRequest
	case errors.As(err, &ue):
		if ue.Status >= 400 && ue.Status < 500 && ue.Status != http.StatusTooManyRequests {
			return http.StatusBadRequest
		}
		if ue.Status == http.StatusServiceUnavailable || ue.Status == http.StatusTooManyRequests {
			return http.StatusServiceUnavailable
		}
		return http.StatusBadGateway
	case errors.As(err, &le):
		return http.StatusInternalServerError
	}
	return http.StatusInternalServerError
}

func (s *Server) retryAfter(w http.ResponseWriter, code int) {
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(max(int(s.opts.RetryAfter.Round(time.Second)/time.Second), 1)))
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func openAIErrorType(code int) string {
	switch {
	case code == http.StatusUnauthorized:
		return api.ErrTypeAuthentication
	case code == http.StatusNotFound:
		return api.ErrTypeNotFound
	case code == http.StatusServiceUnavailable:
		return api.ErrTypeOverloaded
	case code < 500:
		return api.ErrTypeInvalidRequest
	}
	return api.ErrTypeServer
}

func openAIError(code int, msg string) api.ErrorEnvelope {
	e := api.ErrorEnvelope{Error: api.ErrorBody{Message: clipMessage(msg), Type: openAIErrorType(code)}} // one line, ≤ 1 KiB (limits.go)
	switch code {
	case http.StatusNotFound:
		c := "model_not_found"
		e.Error.Code = &c
	case http.StatusServiceUnavailable:
		c := "server_busy"
		e.Error.Code = &c
	}
	return e
}

func writeOpenAIError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, openAIError(code, msg))
}

func writeOllamaError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, api.OllamaError{Error: clipMessage(msg)}) // one line, ≤ 1 KiB (limits.go)
}

// sampling converts API sampling fields.
func sampling(temp, topP, minP, repeat, freq, pres *float64, topK, repeatN *int, seed *int64) engine.Sampling {
	var sm engine.Sampling
	sm.Temperature = temp
	sm.Seed = seed
	if freq != nil {
		sm.FrequencyPenalty = *freq
	}
	if pres != nil {
		sm.PresencePenalty = *pres
	}
	if topP != nil {
		sm.TopP = *topP
	}
	if minP != nil {
		sm.MinP = *minP
	}
	if repeat != nil {
		sm.RepeatPenalty = *repeat
	}
	if topK != nil {
		sm.TopK = *topK
	}
	if repeatN != nil {
		switch n := *repeatN; {
		case n == 0: // Ollama: 0 turns the penalties off (an empty window, as llama.cpp's penalty_last_n 0)
			// PenaltiesOff, not zeros: a zero penalty means "the backend's
			// default", and a vendor runtime's own post_config may enable one.
			sm.RepeatPenalty, sm.FrequencyPenalty, sm.PresencePenalty = 0, 0, 0
			sm.PenaltiesOff = true
		case n < 0: // Ollama: -1 is the whole context
			sm.RepeatLastN = math.MaxInt32
		default:
			sm.RepeatLastN = n
		}
	}
	return sm
}

func keepAlive(d *api.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	v := d.Duration
	return &v
}
