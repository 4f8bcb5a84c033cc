package upstream

import (
	"encoding/json"
	"maps"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// Reasoning models behind an OpenAI-compatible server: the server splits
// the thinking off the answer itself and sends it beside content, as
// reasoning_content (llama.cpp's server with --reasoning-format auto or
// deepseek, vLLM before its rename, DeepSeek's API) or reasoning (vLLM
// since the rename, Ollama's /v1, OpenRouter), in the message and in each
// stream delta. The lane hands it on as engine.Token.Reasoning; serve
// shows it in each route's own field (serve/reasoning.go). The request's
// controls go the other way (thinkFields).

// reasoningOf is a message's or delta's thinking: reasoning_content, or
// reasoning when that is absent (a server in the middle of the rename
// may send both, the same text). A reasoning that is not a string (an
// object some gateways send) is not thinking text: nothing.
func reasoningOf(content *string, alias json.RawMessage) string {
	if content != nil && *content != "" {
		return *content
	}
	var s string
	if len(alias) > 0 && json.Unmarshal(alias, &s) == nil {
		return s
	}
	return ""
}

// thinkFields sets on b the request's reasoning controls as llama.cpp's
// server takes them: reasoning_format as the client sent it, and
// chat_template_kwargs with enable_thinking (Ollama's think, Responses'
// effort none, Anthropic's thinking), reasoning_effort (gpt-oss's
// template reads that variable) and the client's own variables, which
// have the last say. reasoning_effort also goes at the top level, where
// OpenAI's API, vLLM and Ollama's /v1 read it.
func thinkFields(b *api.UpstreamChatRequest, t *engine.Think) {
	if t == nil {
		return
	}
	b.ReasoningFormat, b.ReasoningEffort = t.Format, t.Effort
	vars := map[string]any{}
	if t.On != nil {
		vars["enable_thinking"] = *t.On
	}
	if t.Effort != "" {
		vars["reasoning_effort"] = t.Effort
	}
	maps.Copy(vars, t.Vars)
	if len(vars) > 0 {
		b.ChatTemplateKwargs = vars
	}
}
