package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/toolcall"
)

// Reasoning models (Qwen3, QwQ, DeepSeek R1 and its distills, gpt-oss)
// think in their answer's text before answering. On the cpu lane the
// answer is split as it streams (engine/toolcall's ThinkSplitter for
// <think>…</think>, its harmony parser for the analysis channel) and each
// route hands the thinking over in its own field: reasoning_content
// (chat completions, as llama.cpp's server), thinking (Ollama), a
// reasoning item (Responses), thinking blocks (Anthropic). The request's
// controls (Ollama's think, chat_template_kwargs, reasoning_effort) go
// to the chat template as variables. See docs/serve.md "Reasoning".

// thinkAsk is what a request asks of a model's thinking.
type thinkAsk struct {
	// on turns thinking on or off in the template (enable_thinking; nil:
	// the template's own default).
	on *bool
	// onIfAble: on is true for a model that thinks when the request does
	// not say (Ollama's default), nil for others.
	onIfAble bool
	// strict: on true for a model that does not think is a 400 (Ollama).
	strict bool
	// effort is the template's reasoning_effort ("": not set).
	effort string
	// kwargs are the client's own template variables (chat_template_kwargs).
	kwargs map[string]any
	// split: the thinking is split off the answer; show: and handed to
	// the client (else dropped).
	split, show bool
	// field names the request field in errors (think, reasoning_effort).
	field string
	// format is reasoning_format as the client sent it ("": absent),
	// what an HTTP upstream is forwarded.
	format string
}

// forward is what a asks, as an HTTP upstream is sent it (nil: nothing;
// engine/upstream/reasoning.go). It goes on the request before the lane's
// fields are checked (lanefields.go): the NPU lane refuses it.
func (a thinkAsk) forward() *engine.Think {
	if a.on == nil && a.effort == "" && a.format == "" && len(a.kwargs) == 0 {
		return nil
	}
	return &engine.Think{On: a.on, Effort: a.effort, Format: a.format, Vars: a.kwargs}
}

// ollamaThink reads Ollama's think: true, false, or an effort for the
// models that take one ("low", "medium", "high"; "max" is "high", as
// Ollama reads it). Absent or null: thinking models think and their
// thinking is split off (Ollama's default since 0.9).
func ollamaThink(raw json.RawMessage) (thinkAsk, error) {
	a := thinkAsk{split: true, show: true, strict: true, onIfAble: true, field: "think"}
	if absent(raw) {
		return a, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		a.on, a.onIfAble, a.split, a.show = &b, false, b, b
		return a, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "low", "medium", "high", "max":
			if s == "max" {
				s = "high"
			}
			t := true
			a.on, a.onIfAble, a.effort = &t, false, s
			return a, nil
		}
	}
	return a, &api.FieldError{Field: "think", Msg: fmt.Sprintf(`think %s: want true, false, "low", "medium" or "high"`, short(raw))}
}

// chatThink reads chat completions' reasoning fields: reasoning_format
// (llama.cpp's: "auto" and "deepseek" put thinking in reasoning_content,
// the default; "none" leaves it in content), reasoning_effort (the
// template's variable of that name) and chat_template_kwargs.
func chatThink(req *api.ChatCompletionRequest) (thinkAsk, error) {
	a := thinkAsk{split: true, show: true, effort: req.ReasoningEffort, field: "reasoning_effort", format: req.ReasoningFormat}
	switch req.ReasoningFormat {
	case "", "auto", "deepseek":
	case "none":
		a.split, a.show = false, false
	default:
		return a, &api.FieldError{Field: "reasoning_format", Msg: fmt.Sprintf(`reasoning_format %q: want "auto", "deepseek" (thinking in reasoning_content) or "none" (left in content)`, req.ReasoningFormat)}
	}
	kw, err := templateKwargs(req.ChatTemplateKwargs)
	a.kwargs = kw
	return a, err
}

// templateKwargs reads chat_template_kwargs: an object of variables for
// the chat template, none of those the server sets itself.
func templateKwargs(raw json.RawMessage) (map[string]any, error) {
	if absent(raw) || rawIs(raw, "{}") {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, &api.FieldError{Field: "chat_template_kwargs", Msg: fmt.Sprintf(`chat_template_kwargs: want an object of template variables, e.g. {"enable_thinking": false}, not %s`, short(raw))}
	}
	if len(m) > 64 {
		return nil, &api.FieldError{Field: "chat_template_kwargs", Msg: fmt.Sprintf("chat_template_kwargs has %d variables; at most 64", len(m))}
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch k {
		case "messages", "tools", "add_generation_prompt", "bos_token", "eos_token":
			return nil, &api.FieldError{Field: "chat_template_kwargs", Msg: fmt.Sprintf("chat_template_kwargs.%s is set by the server from the request; leave it out", k)}
		}
		var x any
		d := json.NewDecoder(bytes.NewReader(v))
		if err := d.Decode(&x); err != nil {
			return nil, &api.FieldError{Field: "chat_template_kwargs", Msg: fmt.Sprintf("chat_template_kwargs.%s: %v", k, err)}
		}
		if _, ok := x.(map[string]any); ok {
			x = json.RawMessage(v) // objects keep their key order for tojson
		}
		out[k] = x
	}
	return out, nil
}

// think sets up, for the model on l, what a asks: the template variables
// on req, and the split of the answer on ts. Only the cpu lane renders
// the template and reads the answer's text; an HTTP upstream is
// forwarded a (req.Think) and splits the answer itself; on the NPU lane
// a request for thinking (Ollama's think true) is a 400 and the rest is
// ignored.
func think(e *Entry, l *Lease, ts *toolStream, req *engine.Request, a thinkAsk) error {
	ts.hideReasoning, ts.inlineReasoning = !a.show, !a.split
	asked := a.strict && a.on != nil && *a.on
	switch backend(e) {
	case "cpu":
	case "upstream":
		return nil
	default:
		if asked {
			return &api.FieldError{Field: a.field, Msg: fmt.Sprintf("%s: %s runs on the %s lane, whose answers edgectl does not split; leave it out or send false", a.field, e.Name, e.Lane)}
		}
		return nil
	}
	tmpl := l.Model.Info().ChatTemplate
	kind := toolcall.DetectThinking(tmpl)
	if kind == toolcall.NoThinking && asked {
		return &api.FieldError{Field: a.field, Msg: fmt.Sprintf("%q does not support thinking: its chat template shows no <think> block or analysis channel; leave %s out", e.Name, a.field)}
	}
	if len(req.Messages) == 0 { // a raw prompt: the client wrote the template's part
		return nil
	}
	on := a.on
	if kind == toolcall.NoThinking {
		on = nil
	} else if on == nil && a.onIfAble {
		t := true
		on = &t
	}
	vars := map[string]any{}
	if on != nil {
		maps.Copy(vars, toolcall.ThinkVars(tmpl, *on))
	}
	if a.effort != "" {
		vars["reasoning_effort"] = a.effort
	}
	maps.Copy(vars, a.kwargs) // the client's own say last
	if len(vars) > 0 {
		req.TemplateVars = vars
	}
	switch kind {
	case toolcall.ThinkTags:
		// A grammar (response_format, a required call) writes the answer
		// from its first token: no thinking comes first.
		if a.split && req.Format == nil && !req.Tools.Forced() {
			ts.think = toolcall.NewThinkSplitter(toolcall.OpensThinking(tmpl, vars))
		}
	case toolcall.ThinkHarmony:
		if ts.p == nil { // the engine keeps harmony's markers (engine/cpu/tools.go)
			ts.p = toolcall.NewParser(toolcall.Harmony)
		}
	}
	return nil
}

// thinkingCapable reports whether the model's template shows how it
// thinks (Ollama's "thinking" capability).
func thinkingCapable(e *Entry, info engine.ModelInfo) bool {
	return backend(e) == "cpu" && toolcall.DetectThinking(info.ChatTemplate) != toolcall.NoThinking
}

// reasoningText is the thinking among evs.
func reasoningText(evs []toolcall.Event) string {
	var s string
	for _, e := range evs {
		if e.Kind == toolcall.Reasoning {
			s += e.Text
		}
	}
	return s
}
