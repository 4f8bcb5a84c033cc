package chattemplate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// renderFixture renders testdata/templates/name for msgs with the
// generation prompt.
func renderFixture(t *testing.T, name string, msgs []Message) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata/templates", name))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tmpl.Render(context.Background(), msgs, Vars{AddGenerationPrompt: true})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// An assistant turn's thinking sent back reaches real templates under
// the names they read, and each keeps what it keeps: Qwen3's writes it
// in a <think> block for the turns after the last user message (a
// tool-call chain) and drops it before; gpt-oss's writes it as the
// analysis channel of a tool-calling turn (message.thinking).
func TestReasoningContentReachesTemplates(t *testing.T) {
	const thought = "I should look up the weather in Paris first."
	call := []ToolCall{{ID: "c1", Type: "function", Function: FunctionCall{Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}}
	chain := []Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ReasoningContent: thought, ToolCalls: call},
		{Role: "tool", ToolCallID: "c1", Content: "sunny"},
	}
	out := renderFixture(t, "Qwen-Qwen3-0.6B.jinja", chain)
	if want := "<|im_start|>assistant\n<think>\n" + thought + "\n</think>\n\n"; !strings.Contains(out, want) {
		t.Errorf("Qwen3, tool-call chain: the prompt lacks %q:\n%s", want, out)
	}

	earlier := []Message{
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Hello!", ReasoningContent: thought},
		{Role: "user", Content: "Weather in Paris?"},
	}
	if out := renderFixture(t, "Qwen-Qwen3-0.6B.jinja", earlier); strings.Contains(out, thought) || !strings.Contains(out, "Hello!") {
		t.Errorf("Qwen3, an earlier turn: want its thinking dropped, its answer kept:\n%s", out)
	}

	out = renderFixture(t, "openai-gpt-oss-120b.jinja", chain)
	if want := "<|start|>assistant<|channel|>analysis<|message|>" + thought + "<|end|>"; !strings.Contains(out, want) {
		t.Errorf("gpt-oss, tool-call chain: the prompt lacks %q:\n%s", want, out)
	}

	// No thinking: neither key, as transformers leaves keys a turn lacks
	// absent (templates test `is defined`).
	chain[1].ReasoningContent = ""
	d, err := messageDict(chain[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"reasoning_content", "thinking"} {
		if _, ok := d.Get(k); ok {
			t.Errorf("a turn without thinking has %s", k)
		}
	}
}
