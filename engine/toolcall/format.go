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
	// DeepSeekR1: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>name\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`
	// (DeepSeek V3, R1 and its distills); see deepseek.go.
	DeepSeekR1
	// DeepSeekV31: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>name<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`
	// (DeepSeek V3.1 and later).
	DeepSeekV31
	// Granite: `<|tool_call|>[{"name": …, "arguments": {…}}, …]` (IBM
	// Granite 3.x); see granite.go.
	Granite
	// CommandR: "Action: ```json [{"tool_name": …, "parameters": {…}}, …]```"
	// (Cohere Command R and R+); see cohere.go.
	CommandR
	// CommandR7B: `<|START_ACTION|>[{"tool_call_id": …, "tool_name": …,
	// "parameters": {…}}]<|END_ACTION|>` (Cohere Command R7B).
	CommandR7B
	// Harmony: OpenAI's harmony messages, a call being
	// `<|channel|>commentary to=functions.name <|constrain|>json<|message|>{…}<|call|>`
	// and the analysis channel reasoning (gpt-oss); see harmony.go.
	Harmony
	// FunctionaryV31: `<function=name>{…}</function>` (functionary v3.1,
	// Llama 3.1 based); see functionary.go.
	FunctionaryV31
	// FunctionaryV32: `>>>name\n{…}` per call, `>>>all\n` before text
	// (functionary v3.2).
	FunctionaryV32
)

func (f Format) String() string {
	return [...]string{"none", "hermes", "llama3", "mistral", "mistral-args", "deepseek-r1", "deepseek-v3.1",
		"granite", "command-r", "command-r7b", "harmony", "functionary-v3.1", "functionary-v3.2"}[f]
}

// Detect is the format a chat template renders tool calls in, by the
// markers in its source: "<tool_call>" (Hermes, Qwen), "[TOOL_CALLS]"
// with "[ARGS]" (Mistral v11+) or without (Mistral v3), DeepSeek's
// "<｜tool▁calls▁begin｜>" with a ```json fence (V3/R1) or without (V3.1),
// Granite's "<|tool_call|>", Cohere's "<|START_ACTION|>" (R7B) or
// "Action:" with "tool_name" (R, R+), harmony's "<|channel|>" with
// "functions." (gpt-oss), functionary's "<function=" (v3.1) or ">>>"
// (v3.2) in a Llama 3 template, and Llama 3's header tokens with its `"parameters": ` call
// shape. First match wins; no match is None (tools are then refused: a
// model's own format is the only one it can be expected to write).
func Detect(template string) Format {
	has := func(s string) bool { return strings.Contains(template, s) }
	switch {
	case has("<tool_call>"):
		return Hermes
	case has(dsCallsBegin) && has("```json"):
		return DeepSeekR1
	case has(dsCallsBegin):
		return DeepSeekV31
	case has(graniteMarker):
		return Granite
	case has(r7bBegin):
		return CommandR7B
	case has(cohereAction) && has(`"tool_name"`):
		return CommandR
	case has(hChannel) && has("functions."):
		return Harmony
	case has(fnOpen) && has("<|start_header_id|>"):
		return FunctionaryV31
	case has(fnTo) && has("<|start_header_id|>"):
		return FunctionaryV32
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
	case DeepSeekR1, DeepSeekV31:
		return []string{dsCallsBegin, dsCallBegin, dsSep, dsCallEnd, dsCallsEnd}
	case Granite:
		return []string{graniteMarker}
	case CommandR7B:
		return []string{r7bBegin, r7bEnd}
	case Harmony:
		return []string{hStart, hChannel, hMessage, hConstrain, hEnd, hCall, hReturn}
	case Llama, FunctionaryV31: // built-in tools and code (pythontag.go)
		return []string{pythonTag}
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
	DeepSeekR1:  {head: dsCallsBegin + dsCallBegin + "function" + dsSep, mid: "\n```json\n", tail: "\n```" + dsCallEnd + dsCallsEnd},
	DeepSeekV31: {head: dsCallsBegin + dsCallBegin, mid: dsSep, tail: dsCallEnd + dsCallsEnd},
	Granite:     {head: graniteMarker + "[{\"name\": \"", mid: "\", \"arguments\": ", tail: "}]", json: true},
	// Command R+'s template writes a call in the history exactly so.
	CommandR:       {head: cohereAction + "\n```json\n[\n    {\n        \"tool_name\": \"", mid: "\",\n        \"parameters\": ", tail: "\n    }\n]```", json: true},
	CommandR7B:     {head: r7bBegin + "[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"", mid: "\", \"parameters\": ", tail: "}\n]" + r7bEnd, json: true},
	Harmony:        {head: hChannel + "commentary to=functions.", mid: " " + hConstrain + "json" + hMessage, tail: hCall},
	FunctionaryV31: {head: fnOpen, mid: ">", tail: fnClose},
	FunctionaryV32: {mid: "\n"}, // the generation prompt wrote the first ">>>"
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
		return None, fmt.Errorf("tools: %s's chat template writes tool calls in no format edgectl knows (Hermes/Qwen, Llama 3.x JSON, Mistral, DeepSeek, Granite, Command R, gpt-oss harmony, functionary v3.1/v3.2); leave tools out (or send tool_choice \"none\")", model)
	}
	return f, nil
}
