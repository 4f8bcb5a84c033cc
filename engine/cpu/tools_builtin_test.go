package cpu

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// Llama 3.1's template gets `builtin_tools` as llama.cpp's server passes
// it: the system turn names the offered built-ins, and a built-in call in
// the history is written in its python-tag form, not as JSON.
func TestLlamaBuiltinToolsReachTheTemplate(t *testing.T) {
	m := templatedRandom(t, "meta-llama-Llama-3.1-8B-Instruct.jinja", "")
	tools := json.RawMessage(`[{"type":"function","function":{"name":"brave_search","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}},
	 {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"type":"string"}}}}}]`)
	call := engine.ToolCall{ID: "c1", Function: engine.FunctionCall{Name: "brave_search", Arguments: json.RawMessage(`{"query":"edge npu"}`)}}
	req := engine.Request{Tools: &engine.Tools{Defs: tools, Choice: engine.ToolAuto}, AddGenerationPrompt: true, Messages: []engine.Message{
		{Role: "user", Content: "search for edge npus"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{call}},
		{Role: "tool", Content: "results", ToolCallID: "c1"},
	}}
	s, err := m.NewSession()
	must(t, err)
	defer s.Close()
	ids, err := s.(*session).prompt(context.Background(), req)
	must(t, err)
	text := m.tok.Decode(ids)
	for _, want := range []string{"Environment: ipython\nTools: brave_search\n", `brave_search.call(query="edge npu")`} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Tools: get_time") || strings.Contains(text, `"name": "brave_search", "parameters"`) {
		t.Errorf("a function tool was announced as built in, or the built-in call was written as JSON:\n%s", text)
	}
}
