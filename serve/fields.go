package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// Honest fields: a request field edgectl does not implement is refused
// with a 400 naming it, never accepted and ignored, unless its value asks
// for nothing (tools: [], n: 1, logprobs: false, a penalty of 0, …), which
// is what clients send by default.

// absent reports whether a raw field was left out or null.
func absent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// rawIs reports whether raw is absent or one of the JSON texts in ok.
func rawIs(raw json.RawMessage, ok ...string) bool {
	if absent(raw) {
		return true
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	for _, o := range ok {
		var w any
		json.Unmarshal([]byte(o), &w)
		if reflect.DeepEqual(v, w) {
			return true
		}
	}
	return false
}

func notYet(field, what, instead string) error {
	return &api.FieldError{Field: field, Msg: fmt.Sprintf("%s is not supported yet: %s; %s", field, what, instead)}
}

const whyFunctions = "functions and function_call are OpenAI's deprecated spelling of tools"

// short shows a raw value in an error, cut to a readable length.
func short(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkGeneration validates the fields both OpenAI generation routes take.
func checkGeneration(p *api.GenerationParams, maxTokensField string, maxTokens *int) error {
	err := firstErr(
		api.CheckInt(maxTokensField, maxTokens),
		api.CheckFloat("temperature", p.Temperature),
		api.CheckFloat("top_p", p.TopP),
		api.CheckFloat("min_p", p.MinP),
		api.CheckInt("top_k", p.TopK),
		api.CheckFloat("repeat_penalty", p.RepeatPenalty),
		api.CheckInt("n", p.N),
		api.CheckFloat("frequency_penalty", p.FrequencyPenalty),
		api.CheckFloat("presence_penalty", p.PresencePenalty),
	)
	if err != nil {
		return err
	}
	switch {
	case p.N != nil && *p.N != 1:
		return &api.FieldError{Field: "n", Msg: fmt.Sprintf("n = %d is not supported: edgectl returns one choice per request; send 1 or leave it out", *p.N)}
	case !rawIs(p.LogitBias, "{}"):
		return notYet("logit_bias", "edgectl does not bias token probabilities", "leave it out")
	}
	return nil
}

// checkChatCompletion validates /v1/chat/completions beyond its types.
func checkChatCompletion(req *api.ChatCompletionRequest, maxTokens *int) error {
	field := "max_tokens"
	if req.MaxCompletionTokens != nil {
		field = "max_completion_tokens"
	}
	if err := checkGeneration(&req.GenerationParams, field, maxTokens); err != nil {
		return err
	}
	if _, _, err := chatLogprobsFields(req); err != nil {
		return err
	}
	if _, err := chatFormat(req.ResponseFormat); err != nil { // serve/format.go
		return err
	}
	if _, err := chatTools(req.Tools, req.ToolChoice); err != nil { // serve/tools.go
		return err
	}
	switch {
	case !rawIs(req.Functions, "[]"):
		return notYet("functions", whyFunctions, "send them as tools")
	case !rawIs(req.FunctionCall, `"none"`, `"auto"`):
		return notYet("function_call", whyFunctions, "send tools and tool_choice")
	}
	return nil
}

// chatLogprobsFields reads chat's logprobs (a boolean) and top_logprobs
// (0–20, only with logprobs: true, as OpenAI requires).
func chatLogprobsFields(req *api.ChatCompletionRequest) (on bool, top int, err error) {
	if err := api.CheckInt("top_logprobs", req.TopLogprobs); err != nil {
		return false, 0, err
	}
	if !absent(req.Logprobs) && json.Unmarshal(req.Logprobs, &on) != nil {
		return false, 0, &api.FieldError{Field: "logprobs", Msg: fmt.Sprintf(`field "logprobs" must be true or false, not %s`, short(req.Logprobs))}
	}
	if req.TopLogprobs != nil {
		top = *req.TopLogprobs
	}
	if top > 0 && !on {
		return false, 0, &api.FieldError{Field: "top_logprobs", Msg: "top_logprobs needs logprobs: true; send both, or leave top_logprobs out"}
	}
	return on, top, nil
}

// completionLogprobsField reads /v1/completions' logprobs: how many of the
// most likely tokens to return with each token (0–20; 0, false or null:
// no log-probabilities, as llama.cpp reads n_probs 0).
func completionLogprobsField(raw json.RawMessage) (int, error) {
	if rawIs(raw, "false") {
		return 0, nil
	}
	var n float64
	r := api.Ranges["logprobs"]
	if json.Unmarshal(raw, &n) != nil || n != math.Trunc(n) || n < r.Min || n > r.Max {
		return 0, &api.FieldError{Field: "logprobs", Msg: fmt.Sprintf(
			`field "logprobs" = %s is out of range: want %s (the most likely tokens to return with each token)`, short(raw), r)}
	}
	return int(n), nil
}

// checkCompletion validates /v1/completions beyond its types.
func checkCompletion(req *api.CompletionRequest) error {
	if err := firstErr(checkGeneration(&req.GenerationParams, "max_tokens", req.MaxTokens), api.CheckInt("best_of", req.BestOf)); err != nil {
		return err
	}
	if _, err := completionLogprobsField(req.Logprobs); err != nil {
		return err
	}
	switch {
	case req.Echo != nil && *req.Echo:
		return notYet("echo", "edgectl does not return the prompt with the completion", "leave it out or send false")
	case req.BestOf != nil && *req.BestOf != 1:
		return notYet("best_of", "edgectl generates one completion per request", "leave it out or send 1")
	case req.Suffix != nil && *req.Suffix != "":
		return notYet("suffix", "edgectl does not fill in the middle", "leave it out")
	}
	return nil
}

// checkOllamaOptions validates Ollama's options beyond their types.
func checkOllamaOptions(o *api.Options) error {
	if o == nil {
		return nil
	}
	err := firstErr(
		api.CheckFloat("options.temperature", o.Temperature),
		api.CheckFloat("options.top_p", o.TopP),
		api.CheckFloat("options.min_p", o.MinP),
		api.CheckFloat("options.typical_p", o.TypicalP),
		api.CheckInt("options.top_k", o.TopK),
		api.CheckFloat("options.repeat_penalty", o.RepeatPenalty),
		api.CheckInt("options.repeat_last_n", o.RepeatLastN),
		api.CheckInt("options.num_predict", o.NumPredict),
		api.CheckInt("options.num_ctx", o.NumCtx),
		api.CheckInt("options.num_thread", o.NumThread),
		api.CheckInt("options.mirostat", o.Mirostat),
		api.CheckFloat("options.frequency_penalty", o.FrequencyPenalty),
		api.CheckFloat("options.presence_penalty", o.PresencePenalty),
	)
	if err != nil {
		return err
	}
	switch {
	case o.TypicalP != nil && *o.TypicalP != 1:
		return notYet("options.typical_p", "edgectl has no typical sampling", "leave it out or send 1")
	case o.Mirostat != nil && *o.Mirostat != 0:
		return notYet("options.mirostat", "edgectl has no Mirostat sampling", "leave it out or send 0")
	}
	return nil
}

// ollamaLogprobsFields reads Ollama's logprobs and top_logprobs (0–20, only
// with logprobs: true).
func ollamaLogprobsFields(r api.OllamaLogprobsRequest) (bool, int, error) {
	if err := api.CheckInt("top_logprobs", r.TopLogprobs); err != nil {
		return false, 0, err
	}
	top := 0
	if r.TopLogprobs != nil {
		top = *r.TopLogprobs
	}
	if top > 0 && !r.Logprobs {
		return false, 0, &api.FieldError{Field: "top_logprobs", Msg: "top_logprobs needs logprobs: true; send both, or leave top_logprobs out"}
	}
	return r.Logprobs, top, nil
}

// checkOllamaCommon reads format (serve/format.go) and think
// (serve/reasoning.go).
func checkOllamaCommon(format, think json.RawMessage) error {
	if _, err := ollamaFormat(format); err != nil {
		return err
	}
	_, err := ollamaThink(think)
	return err
}

// checkNumThread accepts options.num_thread only when it is what the
// model's lane already runs with: threads are fixed when a model loads.
func (s *Server) checkNumThread(o *api.Options, e *Entry) error {
	if o == nil || o.NumThread == nil || *o.NumThread == 0 {
		return nil
	}
	ln := s.sched.lanes[e.Lane]
	if e.Lane != LaneCPU || ln == nil {
		return &api.FieldError{Field: "options.num_thread", Msg: fmt.Sprintf(
			"options.num_thread cannot be applied: %s runs on the %s lane, whose backend picks its own threads; leave it out", e.Name, e.Lane)}
	}
	threads := ln.cfg.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if *o.NumThread != threads {
		return &api.FieldError{Field: "options.num_thread", Msg: fmt.Sprintf(
			"options.num_thread = %d cannot be applied per request: the cpu lane runs every model with %d threads (set lanes.cpu.threads in serve --config); leave it out",
			*o.NumThread, threads)}
	}
	return nil
}

// numCtx applies options.num_ctx to req: on the cpu lane a value below the
// loaded context caps this request's context (prompt and output); above it
// is refused, and so is any other value on lanes whose backend sets its own
// context (loaded: the context the model is loaded with, 0 if the lane
// does not say).
func numCtx(o *api.Options, e *Entry, loaded int, req *engine.Request) error {
	if o == nil || o.NumCtx == nil || *o.NumCtx == 0 {
		return nil
	}
	n := *o.NumCtx
	switch {
	case loaded > 0 && n > loaded:
		return &api.FieldError{Field: "options.num_ctx", Msg: fmt.Sprintf(
			"options.num_ctx = %d exceeds the context %s is loaded with (%d tokens): send at most %d (serve --ctx sets the cpu lane's context)",
			n, e.Name, loaded, loaded)}
	case e.Lane != LaneCPU && n != loaded:
		return &api.FieldError{Field: "options.num_ctx", Msg: fmt.Sprintf(
			"options.num_ctx = %d cannot be applied: %s runs on the %s lane, whose backend sets its own context (%s); leave it out",
			n, e.Name, e.Lane, ctxWords(loaded))}
	case e.Lane == LaneCPU:
		req.ContextLimit = n
	}
	return nil
}

func ctxWords(loaded int) string {
	if loaded <= 0 {
		return "not reported"
	}
	return fmt.Sprintf("%d tokens", loaded)
}

// numCtxError names options.num_ctx in a prompt-too-long error: num_ctx is
// at most the loaded context, so it is the limit the prompt is over.
func numCtxError(o *api.Options, err error) error {
	if o == nil || o.NumCtx == nil || *o.NumCtx == 0 || !errors.Is(err, engine.ErrContextFull) {
		return err
	}
	return fmt.Errorf("options.num_ctx = %d: %w", *o.NumCtx, err)
}

// fieldParam is the OpenAI error's param for err, if it is about a field.
func fieldParam(err error) *string {
	var fe *api.FieldError
	if errors.As(err, &fe) {
		return &fe.Field
	}
	return nil
}
