// Package toolcall is tool calling in the formats model families were
// trained on: which format a chat template speaks (Detect), the grammar
// that makes a model write one call to an offered function (Grammar, over
// engine/grammar), and the parser that turns what a model wrote back into
// calls while it streams (Parser). serve offers tools through the chat
// template (chattemplate renders `tools`, assistant `tool_calls` and
// `tool` turns) and answers with OpenAI's tool_calls or Ollama's; the CPU
// engine applies the grammar. See docs/serve.md "Tool calls".
package toolcall

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/edgectl/edgectl/engine"
)

// Format is how a model family writes tool calls.
type Format uint8

const (
	// None: the template shows no format this package knows.
	None Format = iota
	// Hermes: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`,
	// one block per call, text may come first (Qwen2.5, Qwen3, QwQ,
	// Hermes 2 Pro and 3).
	Hermes
	// Llama: `{"name": …, "parameters": {…}}` as the whole answer (Llama
	// 3.1–3.3's JSON tool calling; calls may be separated by ";").
	Llama
	// Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}, …]` (Mistral
	// 7B v0.3, Nemo, Large 2407: tokenizer v3).
	Mistral
	// MistralArgs: `[TOOL_CALLS]name[ARGS]{…}` per call (Mistral Small
	// 3.2, Magistral, Devstral: tokenizer v11 and later).
	MistralArgs
)

func (f Format) String() string {
	return [...]string{"none", "hermes", "llama3", "mistral", "mistral-args"}[f]
}

// Detect is the format a chat template renders tool calls in, by the
// markers in its source: "<tool_call>" (Hermes, Qwen), "[TOOL_CALLS]"
// with "[ARGS]" (Mistral v11+) or without (Mistral v3), and Llama 3's
// header tokens with its `"parameters": ` call shape. First match wins;
// no match is None (tools are then refused: a model's own format is the
// only one it can be expected to write).
func Detect(template string) Format {
	has := func(s string) bool { return strings.Contains(template, s) }
	switch {
	case has("<tool_call>"):
		return Hermes
	case has("[TOOL_CALLS]") && has("[ARGS]"):
		return MistralArgs
	case has("[TOOL_CALLS]"):
		return Mistral
	case has("<|start_header_id|>") && has(`"parameters": `):
		return Llama
	}
	return None
}

// Markers are the texts that may be single special tokens in a family's
// vocabulary and belong to its calls: the engine keeps their text in the
// output (special tokens are otherwise dropped), so the parser sees them,
// and lets the grammar write them as the one token the model knows.
func (f Format) Markers() []string {
	switch f {
	case Hermes:
		return []string{"<tool_call>", "</tool_call>"}
	case Mistral:
		return []string{"[TOOL_CALLS]"}
	case MistralArgs:
		return []string{"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"}
	}
	return nil
}

// wrapper is a family's text around one call: head + name + mid, the
// arguments object, tail. json: the name is written as a JSON string's
// content.
type wrapper struct {
	head, mid, tail string
	json            bool
}

// wrappers are the calls as each family's template renders them in the
// history: what the grammar makes a model write.
var wrappers = map[Format]wrapper{
	Hermes:      {head: "<tool_call>\n{\"name\": \"", mid: "\", \"arguments\": ", tail: "}\n</tool_call>", json: true},
	Llama:       {head: "{\"name\": \"", mid: "\", \"parameters\": ", tail: "}", json: true},
	Mistral:     {head: "[TOOL_CALLS][{\"name\": \"", mid: "\", \"arguments\": ", tail: "}]", json: true},
	MistralArgs: {head: "[TOOL_CALLS]", mid: "[ARGS]"},
}

// callHead is the text before a call's arguments.
func (w wrapper) callHead(name string) string {
	if w.json {
		b, _ := json.Marshal(name)
		name = string(b[1 : len(b)-1])
	}
	return w.head + name + w.mid
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// NewID is a fresh id for a call: OpenAI's shape ("call_" and 24
// characters), or 9 letters and digits for Mistral's families, whose
// templates refuse any other id when the call comes back in the history.
func (f Format) NewID() string {
	if f == Mistral || f == MistralArgs {
		return randomChars(9)
	}
	return "call_" + randomChars(24)
}

func randomChars(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = idChars[int(b[i])%len(idChars)]
	}
	return string(b)
}

// ForTemplate is the format model's chat template (template: its source,
// "" when it has none) writes calls in, when a request offers tools; an
// error, naming tools, when it has none this package knows (as Ollama
// refuses tools for a model whose template has no tool format). Callers
// mark it a client's mistake (engine.ErrInvalidRequest, a 400).
func ForTemplate(model, template string, t *engine.Tools) (Format, error) {
	if !t.Offered() {
		return None, nil
	}
	if template == "" {
		return None, fmt.Errorf("tools: %s has no chat template, so it cannot be shown tools; leave tools out (or send tool_choice \"none\")", model)
	}
	f := Detect(template)
	if f == None {
		return None, fmt.Errorf("tools: %s's chat template writes tool calls in no format edgectl knows (Hermes/Qwen <tool_call>, Llama 3.x JSON, Mistral [TOOL_CALLS]); leave tools out (or send tool_choice \"none\")", model)
	}
	return f, nil
}
