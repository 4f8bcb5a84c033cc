package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"

	"github.com/edgectl/edgectl/serve/api"
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

const (
	whyStructured = "edgectl cannot constrain output to JSON or a schema (structured output is planned)"
	whyTools      = "edgectl models do not call tools (tool calling is planned)"
	whyLogprobs   = "edgectl does not return token log-probabilities yet"
	whyPenalties  = "only repeat_penalty is implemented"
)

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
	case !rawIs(p.Logprobs, "false", "0"):
		return notYet("logprobs", whyLogprobs, "leave it out or send false")
	case p.FrequencyPenalty != nil && *p.FrequencyPenalty != 0:
		return notYet("frequency_penalty", whyPenalties, "leave it out or send 0")
	case p.PresencePenalty != nil && *p.PresencePenalty != 0:
		return notYet("presence_penalty", whyPenalties, "leave it out or send 0")
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
	if err := api.CheckInt("top_logprobs", req.TopLogprobs); err != nil {
		return err
	}
	switch {
	case !rawIs(req.ResponseFormat, `{"type":"text"}`):
		return notYet("response_format", whyStructured, `leave it out or send {"type":"text"}`)
	case !rawIs(req.Tools, "[]"):
		return notYet("tools", whyTools, "leave tools out")
	case !rawIs(req.ToolChoice, `"none"`, `"auto"`):
		return notYet("tool_choice", whyTools, `leave it out or send "none"`)
	case !rawIs(req.Functions, "[]"):
		return notYet("functions", whyTools, "leave functions out")
	case !rawIs(req.FunctionCall, `"none"`, `"auto"`):
		return notYet("function_call", whyTools, `leave it out or send "none"`)
	case req.TopLogprobs != nil && *req.TopLogprobs != 0:
		return notYet("top_logprobs", whyLogprobs, "leave it out or send 0")
	}
	return nil
}

// checkCompletion validates /v1/completions beyond its types.
func checkCompletion(req *api.CompletionRequest) error {
	if err := firstErr(checkGeneration(&req.GenerationParams, "max_tokens", req.MaxTokens), api.CheckInt("best_of", req.BestOf)); err != nil {
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
	case o.FrequencyPenalty != nil && *o.FrequencyPenalty != 0:
		return notYet("options.frequency_penalty", whyPenalties, "leave it out or send 0")
	case o.PresencePenalty != nil && *o.PresencePenalty != 0:
		return notYet("options.presence_penalty", whyPenalties, "leave it out or send 0")
	case o.TypicalP != nil && *o.TypicalP != 1:
		return notYet("options.typical_p", "edgectl has no typical sampling", "leave it out or send 1")
	case o.Mirostat != nil && *o.Mirostat != 0:
		return notYet("options.mirostat", "edgectl has no Mirostat sampling", "leave it out or send 0")
	}
	return nil
}

// checkOllamaCommon refuses format (JSON mode, schemas) and think; think
// false asks for nothing (clients send it to turn thinking off) and passes.
func checkOllamaCommon(format, think json.RawMessage) error {
	switch {
	case !rawIs(format, `""`):
		return notYet("format", whyStructured, "leave it out")
	case !rawIs(think, "false"):
		return notYet("think", "edgectl does not separate a model's thinking from its answer", "leave it out")
	}
	return nil
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

// checkNumCtx refuses options.num_ctx beyond the context the model is
// loaded with (known once it is loaded; 0: the lane does not say).
func checkNumCtx(o *api.Options, model string, loaded int) error {
	if o == nil || o.NumCtx == nil || loaded <= 0 || *o.NumCtx <= loaded {
		return nil
	}
	return &api.FieldError{Field: "options.num_ctx", Msg: fmt.Sprintf(
		"options.num_ctx = %d exceeds the context %s is loaded with (%d tokens): send at most %d (serve --ctx sets the cpu lane's context)",
		*o.NumCtx, model, loaded, loaded)}
}

// fieldParam is the OpenAI error's param for err, if it is about a field.
func fieldParam(err error) *string {
	var fe *api.FieldError
	if errors.As(err, &fe) {
		return &fe.Field
	}
	return nil
}
