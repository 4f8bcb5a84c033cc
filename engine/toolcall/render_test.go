package toolcall

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/chattemplate"
)

// renderTools have a description on every parameter: Command R+'s
// template requires one.
const renderTools = `[{"type":"function","function":{"name":"get_weather","description":"Weather in a city",
 "parameters":{"type":"object","properties":{"city":{"type":"string","description":"the city"}},"required":["city"]}}}]`

// Each added family's real template is detected, renders the tools, an
// assistant call and a tool turn (Prepare fitting the conversation to
// it), and the family's parser reads the call back out of the prompt.
func TestRenderFamilyTemplates(t *testing.T) {
	ents, err := templateFiles()
	if err != nil {
		t.Skip(err)
	}
	for name, want := range map[string]Format{
		"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja":      DeepSeekR1,
		"deepseek-ai-DeepSeek-V3.1.jinja":                     DeepSeekV31,
		"ibm-granite-granite-3.3-2B-Instruct.jinja":           Granite,
		"CohereForAI-c4ai-command-r-plus-tool_use.jinja":      CommandR,
		"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": CommandR7B,
		"openai-gpt-oss-120b.jinja":                           Harmony,
		"meetkai-functionary-medium-v3.1.jinja":               FunctionaryV31,
		"meetkai-functionary-medium-v3.2.jinja":               FunctionaryV32,
	} {
		src, ok := ents[name]
		if !ok {
			t.Errorf("%s: template missing", name)
			continue
		}
		f := Detect(src)
		if f != want {
			t.Errorf("%s: detected %v, want %v", name, f, want)
			continue
		}
		tools := &engine.Tools{Defs: json.RawMessage(renderTools), Choice: engine.ToolAuto}
		msgs := Prepare(f, tools, []engine.Message{
			{Role: "system", Content: "Be brief."},
			{Role: "user", Content: "Weather in Zürich?"},
			{Role: "assistant", ToolCalls: []engine.ToolCall{{ID: "call_1", Type: "function",
				Function: engine.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Zürich"}`)}}}},
			{Role: "tool", ToolCallID: "call_1", Name: "get_weather", Content: `{"temp_c": 21}`},
		})
		tm, err := chattemplate.Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		prompt, err := tm.Render(context.Background(), msgs, chattemplate.Vars{AddGenerationPrompt: true,
			Extra: map[string]any{"tools": json.RawMessage(renderTools)}})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !strings.Contains(prompt, "Weather in a city") || !strings.Contains(prompt, `{"temp_c": 21}`) && !strings.Contains(prompt, `temp_c\": 21`) {
			t.Errorf("%s: the prompt lacks the tool or its result:\n%s", name, prompt)
		}
		a := collect(t, NewParser(f), []string{prompt})
		found := false
		for _, c := range a.calls {
			found = found || c.Name == "get_weather" && sameJSON(c.Arguments, `{"city": "Zürich"}`) && c.Valid
		}
		if !found {
			t.Errorf("%s (%v): the history's call does not parse back from the prompt: %+v\n%s", name, f, a.calls, prompt)
		}
	}
}

// Prepare leaves the caller's messages alone and other formats' as they are.
func TestPrepareKeepsMessages(t *testing.T) {
	msgs := []engine.Message{{Role: "user", Content: "x"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{{Function: engine.FunctionCall{Name: "f", Arguments: json.RawMessage(`{"a": 1}`)}}}}}
	for _, f := range allFormats {
		out := Prepare(f, &engine.Tools{Defs: json.RawMessage(renderTools), Choice: engine.ToolAuto}, msgs)
		if string(msgs[1].ToolCalls[0].Function.Arguments) != `{"a": 1}` || msgs[0].Content != "x" || len(msgs) != 2 {
			t.Fatalf("%v: the caller's messages changed", f)
		}
		if f == Hermes && &out[0] != &msgs[0] {
			t.Error("Hermes messages copied")
		}
	}
}
