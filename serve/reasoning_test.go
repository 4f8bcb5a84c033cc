package serve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/toolcall"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// sharedQwen3Template is the design fixtures' Qwen3 template, whose
// generation prompt opens <think> when open_thinking is true and writes
// an empty block otherwise.
const sharedQwen3Template = "../../shared/fixtures/qwen3-tokenizer/chat_template.jinja"

// reasoningServer serves the TinyStories model under thinking templates:
// qwq (QwQ's real template opens <think> in the generation prompt, as
// DeepSeek R1's distills do: all the model writes is thinking, until a
// </think> it cannot be made to write), qwen3 (Qwen3's: the model opens
// the block itself, which TinyStories never does), llama (a template
// without thinking) and, when the shared fixtures are there, qwen3-open
// (a template that opens the block only when the client's
// chat_template_kwargs say open_thinking).
func reasoningServer(t *testing.T) (*testServer, bool) {
	t.Helper()
	root := t.TempDir()
	templatedTinyDir(t, root, "qwq", "Qwen-QwQ-32B.jinja")
	templatedTinyDir(t, root, "qwen3", "Qwen-Qwen3-0.6B.jinja")
	templatedTinyDir(t, root, "llama", "meta-llama-Llama-3.1-8B-Instruct.jinja")
	shared := false
	if _, err := os.Stat(sharedQwen3Template); err == nil {
		abs, _ := filepath.Abs(sharedQwen3Template)
		base, _ := filepath.Abs("../format/chattemplate/testdata/templates")
		rel, _ := filepath.Rel(base, abs)
		templatedTinyDir(t, root, "qwen3-open", rel)
		shared = true
	}
	return start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}}), shared
}

// extraString is a JSON field openai-go does not know (reasoning_content),
// read from its extra fields.
func extraString(t *testing.T, fields map[string]interface{ Raw() string }, key string) string {
	t.Helper()
	f, ok := fields[key]
	if !ok || f.Raw() == "" || f.Raw() == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal([]byte(f.Raw()), &s); err != nil {
		t.Fatalf("%s: %s is not a string: %v", key, f.Raw(), err)
	}
	return s
}

// Through openai-go: on a template that opens <think>, the answer is
// thinking, in reasoning_content (llama.cpp's reasoning_format auto),
// the same streamed as not; reasoning_format none leaves it in content,
// word for word.
func TestReasoningContentThroughOpenAIClient(t *testing.T) {
	ts, _ := reasoningServer(t)
	params := openai.ChatCompletionNewParams{Model: "qwq", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story.")},
		MaxTokens: openai.Int(24), Temperature: openai.Float(0), Seed: openai.Int(1)}
	resp, err := ts.chat().New(context.Background(), params)
	if err != nil || len(resp.Choices) != 1 {
		t.Fatalf("%v %+v", err, resp)
	}
	msg := resp.Choices[0].Message
	reasoning := extraString(t, extraFields(msg.JSON.ExtraFields), "reasoning_content")
	if reasoning == "" || msg.Content != "" {
		t.Fatalf("content %q, reasoning_content %q; want all of the answer in reasoning_content (%s)", msg.Content, reasoning, msg.RawJSON())
	}
	t.Logf("reasoning_content: %q", reasoning)

	stream := ts.chat().NewStreaming(context.Background(), params)
	var streamed, content strings.Builder
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) == 0 {
			continue
		}
		streamed.WriteString(extraString(t, extraFields(c.Choices[0].Delta.JSON.ExtraFields), "reasoning_content"))
		content.WriteString(c.Choices[0].Delta.Content)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if streamed.String() != reasoning || content.String() != "" {
		t.Errorf("streamed reasoning_content %q, content %q; want %q and none", streamed.String(), content.String(), reasoning)
	}

	raw, err := ts.chat().New(context.Background(), params, option.WithJSONSet("reasoning_format", "none"))
	if err != nil {
		t.Fatal(err)
	}
	if got := raw.Choices[0].Message; strings.TrimSpace(got.Content) != reasoning || extraString(t, extraFields(got.JSON.ExtraFields), "reasoning_content") != "" {
		t.Errorf("reasoning_format none: content %q; want the thinking %q left in it", got.Content, reasoning)
	}

	// enable_thinking reaches Qwen3's template: false writes an empty
	// block after the generation prompt (more prompt tokens), and the
	// answer, which TinyStories never opens a block in, is content.
	params.Model = "qwen3"
	on, err := ts.chat().New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	off, err := ts.chat().New(context.Background(), params, option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": false}))
	if err != nil {
		t.Fatal(err)
	}
	if off.Usage.PromptTokens <= on.Usage.PromptTokens || off.Choices[0].Message.Content == "" || on.Choices[0].Message.Content == "" {
		t.Errorf("qwen3: enable_thinking false %d prompt tokens (%s), default %d (%s); want more, and content both times",
			off.Usage.PromptTokens, off.Choices[0].Message.RawJSON(), on.Usage.PromptTokens, on.Choices[0].Message.RawJSON())
	}

	// A template without thinking: content as before, no reasoning_content.
	params.Model = "llama"
	plain, err := ts.chat().New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.Choices[0].Message; got.Content == "" || strings.Contains(got.RawJSON(), "reasoning_content") {
		t.Errorf("llama template: %s; want content and no reasoning_content", got.RawJSON())
	}
}

// extraFields adapts openai-go's extra-field map to what extraString reads.
func extraFields[F interface{ Raw() string }](m map[string]F) map[string]interface{ Raw() string } {
	out := make(map[string]interface{ Raw() string }, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// chat_template_kwargs reach the template: the shared Qwen3 template
// opens the block only for open_thinking, and the same model's answer
// then moves from content to reasoning_content.
func TestChatTemplateKwargsOpenThinking(t *testing.T) {
	ts, shared := reasoningServer(t)
	if !shared {
		t.Skipf("%s is absent (the design fixtures in /work/shared)", sharedQwen3Template)
	}
	params := openai.ChatCompletionNewParams{Model: "qwen3-open", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story.")},
		MaxTokens: openai.Int(16), Temperature: openai.Float(0)}
	closed, err := ts.chat().New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if m := closed.Choices[0].Message; m.Content == "" || extraString(t, extraFields(m.JSON.ExtraFields), "reasoning_content") != "" {
		t.Fatalf("without open_thinking: %s; want content only", m.RawJSON())
	}
	open, err := ts.chat().New(context.Background(), params, option.WithJSONSet("chat_template_kwargs", map[string]any{"open_thinking": true}))
	if err != nil {
		t.Fatal(err)
	}
	if m := open.Choices[0].Message; m.Content != "" || extraString(t, extraFields(m.JSON.ExtraFields), "reasoning_content") == "" {
		t.Fatalf("with open_thinking: %s; want reasoning_content only", m.RawJSON())
	}
	for _, bad := range []string{`{"model":"qwen3-open","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":[1]}`,
		`{"model":"qwen3-open","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"tools":[]}}`,
		`{"model":"qwen3-open","messages":[{"role":"user","content":"hi"}],"reasoning_format":"xml"}`} {
		code, _, body := post(t, ts.URL+"/v1/chat/completions", bad)
		if code != 400 || !strings.Contains(string(body), `"param":"`) {
			t.Errorf("%s: %d %s; want a 400 naming the field", bad, code, body)
		}
	}
}

// Ollama's think over raw HTTP: absent, a thinking model's thinking is in
// message.thinking (chat) and thinking (generate), the same streamed as
// not; false leaves the text in content; true on a model without
// thinking is a 400, as Ollama answers; /api/show lists "thinking".
func TestOllamaThinkOverHTTP(t *testing.T) {
	ts, _ := reasoningServer(t)
	chat := func(model string, think any, stream bool) (int, []byte) {
		req := map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": "Tell me a story."}},
			"stream": stream, "options": map[string]any{"temperature": 0, "num_predict": 24}}
		if think != nil {
			req["think"] = think
		}
		code, _, body := post(t, ts.URL+"/api/chat", req)
		return code, body
	}
	code, body := chat("qwq", nil, false)
	var whole struct {
		Message struct{ Content, Thinking string }
	}
	if code != 200 || json.Unmarshal(body, &whole) != nil || whole.Message.Thinking == "" || whole.Message.Content != "" {
		t.Fatalf("qwq, think absent: %d %s; want the answer in message.thinking", code, body)
	}
	code, body = chat("qwq", nil, true)
	var thinking, content strings.Builder
	for _, line := range ndjson(t, body) {
		m, _ := line["message"].(map[string]any)
		s, _ := m["thinking"].(string)
		thinking.WriteString(s)
		s, _ = m["content"].(string)
		content.WriteString(s)
	}
	if code != 200 || thinking.String() != whole.Message.Thinking || content.String() != "" {
		t.Errorf("streamed: thinking %q content %q; want %q and none", thinking.String(), content.String(), whole.Message.Thinking)
	}
	for _, think := range []any{true, "high"} {
		if code, body := chat("qwq", think, false); code != 200 || !strings.Contains(string(body), `"thinking":`) {
			t.Errorf("think %v: %d %s", think, code, body)
		}
	}
	code, body = chat("qwq", false, false)
	var off struct{ Message map[string]any }
	if code != 200 || json.Unmarshal(body, &off) != nil || strings.TrimSpace(off.Message["content"].(string)) != whole.Message.Thinking || off.Message["thinking"] != nil {
		t.Errorf("think false: %d %s; want the text %q in content", code, body, whole.Message.Thinking)
	}
	// think reaches Qwen3's template as enable_thinking: false adds the
	// empty block to the prompt.
	prompt := func(think any) float64 {
		code, body := chat("qwen3", think, false)
		var m map[string]any
		if code != 200 || json.Unmarshal(body, &m) != nil {
			t.Fatalf("qwen3 think %v: %d %s", think, code, body)
		}
		n, _ := m["prompt_eval_count"].(float64)
		return n
	}
	if absent, off := prompt(nil), prompt(false); off <= absent || prompt(true) != absent {
		t.Errorf("qwen3 prompt tokens: think absent %v, false %v, true %v; want false to add the empty block, absent as true", absent, off, prompt(true))
	}
	if code, body := chat("llama", true, false); code != 400 || !strings.Contains(string(body), "does not support thinking") {
		t.Errorf("think true on a template without thinking: %d %s; want Ollama's 400", code, body)
	}
	if code, body := chat("llama", nil, false); code != 200 || strings.Contains(string(body), `"thinking"`) {
		t.Errorf("llama, think absent: %d %s; want content only", code, body)
	}
	if code, body := chat("qwq", "lots", false); code != 400 || !strings.Contains(string(body), "think") {
		t.Errorf("think \"lots\": %d %s; want a 400 naming think", code, body)
	}

	code, _, body = post(t, ts.URL+"/api/generate", map[string]any{"model": "qwq", "prompt": "Tell me a story.", "stream": false,
		"options": map[string]any{"temperature": 0, "num_predict": 24}})
	var gen struct{ Response, Thinking string }
	if code != 200 || json.Unmarshal(body, &gen) != nil || gen.Thinking != whole.Message.Thinking || gen.Response != "" {
		t.Errorf("generate: %d %s; want thinking %q", code, body, whole.Message.Thinking)
	}
	code, _, body = post(t, ts.URL+"/api/show", map[string]any{"model": "qwq"})
	if code != 200 || !strings.Contains(string(body), `"thinking"`) {
		t.Errorf("/api/show qwq (loaded): %d %s; want the thinking capability", code, body)
	}
}

// qwqReasoning is what the qwq model thinks for "Tell me a story." at
// temperature 0 in max tokens, as chat completions give it.
func qwqReasoning(t *testing.T, ts *testServer, max int64) string {
	t.Helper()
	resp, err := ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "qwq", MaxTokens: openai.Int(max), Temperature: openai.Float(0),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story.")}})
	if err != nil {
		t.Fatal(err)
	}
	r := extraString(t, extraFields(resp.Choices[0].Message.JSON.ExtraFields), "reasoning_content")
	if r == "" {
		t.Fatalf("no reasoning_content: %s", resp.RawJSON())
	}
	return r
}

// Through anthropic-sdk-go: thinking enabled, the thinking is a thinking
// block (signed "edgectl") before the text, the same streamed
// (thinking_delta, signature_delta) as not; without it, it is dropped.
func TestThinkingBlocksThroughAnthropicClient(t *testing.T) {
	ts, _ := reasoningServer(t)
	want := qwqReasoning(t, ts, 16)
	c := ts.anthropic()
	params := anthropic.MessageNewParams{Model: "qwq", MaxTokens: 16, Temperature: anthropic.Float(0),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Tell me a story."))},
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024)}
	msg, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "thinking" || msg.Content[0].Thinking != want || msg.Content[0].Signature != "edgectl" {
		t.Fatalf("%s; want one thinking block with %q", msg.RawJSON(), want)
	}
	acc, types := streamMessage(t, c, params)
	if len(acc.Content) != 1 || acc.Content[0].Thinking != want || acc.Content[0].Signature != "edgectl" {
		t.Errorf("streamed %s (events %v)", acc.RawJSON(), types)
	}
	// Past thinking sent back in the history is accepted (and dropped).
	params.Messages = append(params.Messages, anthropic.NewAssistantMessage(anthropic.NewThinkingBlock("edgectl", want), anthropic.NewTextBlock("Once.")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("Another.")))
	if _, err := c.Messages.New(context.Background(), params); err != nil {
		t.Errorf("thinking in the history: %v", err)
	}
	params.Thinking = anthropic.ThinkingConfigParamUnion{}
	params.Messages = params.Messages[:1]
	off, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(off.RawJSON(), `"thinking"`) || strings.Contains(off.RawJSON(), strings.TrimSpace(want)) {
		t.Errorf("thinking not asked for: %s; want it dropped", off.RawJSON())
	}
}

// Through openai-go's Responses: the thinking is a reasoning item before
// the message, its summary text the thinking, the same streamed.
func TestReasoningItemThroughResponses(t *testing.T) {
	ts, _ := reasoningServer(t)
	want := qwqReasoning(t, ts, 16)
	params := responses.ResponseNewParams{Model: "qwq", MaxOutputTokens: openai.Int(16), Temperature: openai.Float(0),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me a story.")}}
	c := ts.client()
	resp, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 2 || resp.Output[0].Type != "reasoning" || !strings.HasPrefix(resp.Output[0].ID, "rs_") ||
		len(resp.Output[0].Summary) != 1 || resp.Output[0].Summary[0].Text != want || resp.Output[1].Type != "message" || resp.OutputText() != "" {
		t.Fatalf("%s; want a reasoning item with %q, then an empty message", resp.RawJSON(), want)
	}
	types, _, last := responsesStream(t, ts, params)
	joined := strings.Join(types, " ")
	if !strings.Contains(joined, "response.output_item.added response.reasoning_summary_part.added response.reasoning_summary_text.delta") ||
		!strings.Contains(joined, "response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.done") {
		t.Errorf("events %v", types)
	}
	if len(last.Output) != 2 || last.Output[0].Summary[0].Text != want {
		t.Errorf("streamed %s", last.RawJSON())
	}
	for _, bad := range []string{`{"effort":"max"}`, `{"summary":"everything"}`} {
		code, _, body := post(t, ts.URL+"/v1/responses", `{"model":"qwq","input":"hi","reasoning":`+bad+`}`)
		if code != 400 || !strings.Contains(string(body), `"param":"reasoning.`) {
			t.Errorf("reasoning %s: %d %s", bad, code, body)
		}
	}
}

// The split composes with the tool-call parser: thinking first, then the
// call in the family's format, however the answer streams; harmony's
// analysis channel is thinking, dropped when not asked for.
func TestToolStreamThinkingThenCall(t *testing.T) {
	run := func(ts *toolStream, answer string, step int) (reasoning, text string, calls []string) {
		collect := func(evs []toolcall.Event) {
			for _, e := range evs {
				switch e.Kind {
				case toolcall.Reasoning:
					reasoning += e.Text
				case toolcall.Text:
					text += e.Text
				case toolcall.End:
					calls = append(calls, e.Call.Name+e.Call.Arguments)
				}
			}
		}
		for i := 0; i < len(answer); i += step {
			collect(ts.push(engine.Token{Text: answer[i:min(i+step, len(answer))]}))
		}
		collect(ts.flush())
		return
	}
	hermes := "<think>\nThe user wants the weather; <tool_call> here is only a thought.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"
	harmony := "<|channel|>analysis<|message|>Need a greeting.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>"
	for _, step := range []int{1, 2, 3, 7, len(hermes)} {
		ts := newToolStream(toolcall.Hermes, &engine.Tools{Choice: engine.ToolAuto})
		ts.think = toolcall.NewThinkSplitter(false)
		r, text, calls := run(ts, hermes, step)
		if r != "The user wants the weather; <tool_call> here is only a thought." || text != "" || len(calls) != 1 || calls[0] != `get_weather{"city": "Oslo"}` {
			t.Errorf("hermes, %d-byte pieces: reasoning %q text %q calls %q", step, r, text, calls)
		}
		ts = newToolStream(toolcall.Harmony, nil)
		if r, text, _ := run(ts, harmony, step); r != "Need a greeting." || text != "Hello!" {
			t.Errorf("harmony, %d-byte pieces: reasoning %q text %q", step, r, text)
		}
		ts = newToolStream(toolcall.Harmony, nil)
		ts.hideReasoning = true
		if r, text, _ := run(ts, harmony, step); r != "" || text != "Hello!" {
			t.Errorf("harmony hidden, %d-byte pieces: reasoning %q text %q", step, r, text)
		}
	}
}
