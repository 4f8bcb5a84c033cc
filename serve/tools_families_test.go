package serve

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// familyTemplates are the real chat templates of the families added after
// the first four (engine/toolcall's deepseek.go, granite.go, cohere.go,
// harmony.go, functionary.go). DeepSeek's markers are special tokens
// whose text (U+FF5C, U+2581) the test model cannot spell: engine/toolcall's
// grammar tests write them as the one special token.
var familyTemplates = map[string]string{
	"granite":       "ibm-granite-granite-3.3-2B-Instruct.jinja",
	"command-r":     "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
	"command-r7b":   "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
	"gpt-oss":       "openai-gpt-oss-120b.jinja",
	"functionary31": "meetkai-functionary-medium-v3.1.jinja",
	"functionary32": "meetkai-functionary-medium-v3.2.jinja",
}

// Through the official client, each added family's real template takes
// the tools, a call and a tool turn in the history, and a named
// tool_choice makes the TinyStories model (which has never seen a tool)
// answer one call in the family's own format: it comes back as
// tool_calls whose arguments validate, finish_reason "tool_calls", the
// same streamed (openai-go's accumulator) as not.
func TestToolChoiceFamiliesThroughOpenAIClient(t *testing.T) {
	root := t.TempDir()
	for name, tmpl := range familyTemplates {
		templatedTinyDir(t, root, name, tmpl)
	}
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
	tool := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time", Description: openai.String("Current time in a zone"),
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"zone": map[string]any{"type": "string", "description": "an IANA zone",
			"minLength": 1, "maxLength": 16}}, "required": []string{"zone"}, "additionalProperties": false}})
	history := []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("What time is it in Paris?"),
		{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_abc", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
				Name: "get_time", Arguments: `{"zone": "Europe/Paris"}`}}}}}},
		openai.ToolMessage(`{"time": "14:02"}`, "call_abc"),
		openai.UserMessage("And in Tokyo?"),
	}
	for model := range familyTemplates {
		params := openai.ChatCompletionNewParams{Model: model, Messages: history, MaxTokens: openai.Int(300), Temperature: openai.Float(0),
			Tools: []openai.ChatCompletionToolUnionParam{tool}, ToolChoice: openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"})}
		resp, err := ts.chat().New(context.Background(), params)
		if err != nil || len(resp.Choices) != 1 {
			var apiErr *openai.Error
			if errors.As(err, &apiErr) {
				t.Fatalf("%s: %s", model, apiErr.RawJSON())
			}
			t.Fatalf("%s: %v", model, err)
		}
		ch := resp.Choices[0]
		if ch.FinishReason != "tool_calls" || ch.Message.Content != "" || len(ch.Message.ToolCalls) != 1 {
			t.Fatalf("%s: %+v", model, ch)
		}
		call := ch.Message.ToolCalls[0]
		if call.Function.Name != "get_time" || !strings.HasPrefix(call.ID, "call_") {
			t.Errorf("%s: %s %s", model, call.ID, call.Function.Name)
		}
		checkToolArgs(t, model, call.Function.Name, call.Function.Arguments)
		t.Logf("%s: %s(%s)", model, call.Function.Name, call.Function.Arguments)

		stream := ts.chat().NewStreaming(context.Background(), params)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil || len(acc.Choices) != 1 {
			t.Fatalf("%s stream: %v", model, err)
		}
		got := acc.Choices[0]
		if got.FinishReason != "tool_calls" || got.Message.Content != "" || len(got.Message.ToolCalls) != 1 ||
			got.Message.ToolCalls[0].Function.Name != call.Function.Name || got.Message.ToolCalls[0].Function.Arguments != call.Function.Arguments {
			t.Errorf("%s: streamed %+v, unstreamed %+v", model, got.Message, ch.Message)
		}
	}
}
