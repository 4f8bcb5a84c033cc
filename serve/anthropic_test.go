package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/openai/openai-go/v3"
)

func (ts *testServer) anthropic(extra ...aoption.RequestOption) anthropic.Client {
	opts := append([]aoption.RequestOption{aoption.WithBaseURL(ts.URL + "/"), aoption.WithAPIKey("unused"), aoption.WithMaxRetries(0)}, extra...)
	return anthropic.NewClient(opts...)
}

// streamMessage accumulates a Messages stream as anthropic-sdk-go's users
// do, and lists its event types.
func streamMessage(t *testing.T, c anthropic.Client, params anthropic.MessageNewParams) (anthropic.Message, []string) {
	t.Helper()
	stream := c.Messages.NewStreaming(context.Background(), params)
	var msg anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return msg, types
}

// The Messages API answers as the same request through chat completions
// does (same template, sampling, usage), with stop_reason max_tokens or
// end_turn; streamed, its events come in Anthropic's order and
// accumulate into the same message.
func TestMessagesThroughAnthropicClient(t *testing.T) {
	ts := tinyResponses(t)
	ctx := context.Background()
	chat, err := ts.chat().New(ctx, openai.ChatCompletionNewParams{Model: "tinystories", MaxTokens: openai.Int(12), Temperature: openai.Float(0),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}})
	if err != nil {
		t.Fatal(err)
	}
	c := ts.anthropic()
	params := anthropic.MessageNewParams{Model: "tinystories", MaxTokens: 12, Temperature: anthropic.Float(0),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Once upon a time"))}}
	msg, err := c.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msg.ID, "msg_") || msg.Type != "message" || msg.Role != "assistant" || msg.StopReason != anthropic.StopReasonMaxTokens ||
		len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text != chat.Choices[0].Message.Content {
		t.Fatalf("%s (chat completions answered %q)", msg.RawJSON(), chat.Choices[0].Message.Content)
	}
	if msg.Usage.InputTokens != chat.Usage.PromptTokens || msg.Usage.OutputTokens != 12 {
		t.Errorf("usage %s, chat's %+v", msg.Usage.RawJSON(), chat.Usage)
	}

	acc, types := streamMessage(t, c, params)
	want := "message_start content_block_start content_block_delta" // the SDK passes no pings on
	if !strings.HasPrefix(strings.Join(types, " "), want) || !strings.HasSuffix(strings.Join(types, " "), "content_block_delta content_block_stop message_delta message_stop") {
		t.Errorf("events %v", types)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != msg.Content[0].Text || acc.StopReason != anthropic.StopReasonMaxTokens ||
		acc.Usage.OutputTokens != 12 || acc.Usage.InputTokens != msg.Usage.InputTokens {
		t.Errorf("streamed %s, unstreamed %s", acc.RawJSON(), msg.RawJSON())
	}

	// system (text blocks) is the system turn; an answer that ends by
	// itself is end_turn.
	params.System = []anthropic.TextBlockParam{{Text: "Tell a story."}}
	params.MaxTokens = 400
	full, err := c.Messages.New(ctx, params)
	if err != nil || full.StopReason != anthropic.StopReasonEndTurn || full.Usage.InputTokens <= msg.Usage.InputTokens || full.Usage.OutputTokens >= 400 {
		t.Errorf("%v %s", err, full.RawJSON())
	}
}

// stop_sequences cut the answer before the sequence, and the answer says
// which one (stop_reason stop_sequence), streamed or not; the text before
// it is what the unstopped answer has there.
func TestMessagesStopSequences(t *testing.T) {
	ts := tinyResponses(t)
	c := ts.anthropic()
	params := anthropic.MessageNewParams{Model: "tinystories", MaxTokens: 60, Temperature: anthropic.Float(0),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Once upon a time"))}}
	plain, err := c.Messages.New(context.Background(), params)
	if err != nil || len(plain.Content) != 1 {
		t.Fatalf("%v %+v", err, plain)
	}
	text := plain.Content[0].Text
	// A sequence from the middle of the answer: its second word.
	words := strings.Fields(text)
	if len(words) < 4 {
		t.Fatalf("answer too short to cut: %q", text)
	}
	stop := " " + words[2]
	cut := text[:strings.Index(text, stop)]
	params.StopSequences = []string{"never in the text", stop}
	for _, stream := range []bool{false, true} {
		var msg anthropic.Message
		if stream {
			msg, _ = streamMessage(t, c, params)
		} else if msg1, err := c.Messages.New(context.Background(), params); err != nil {
			t.Fatal(err)
		} else {
			msg = *msg1
		}
		got := ""
		if len(msg.Content) > 0 {
			got = msg.Content[0].Text
		}
		if msg.StopReason != anthropic.StopReasonStopSequence || msg.StopSequence != stop || got != cut {
			t.Errorf("stream %v: %q (%s %q), want %q cut at %q", stream, got, msg.StopReason, msg.StopSequence, cut, stop)
		}
	}
}

// Client tools with tool_choice {"type":"tool"} make a tool_use block
// whose input validates, stop_reason tool_use, streamed as
// input_json_delta; a history of tool_use and tool_result blocks renders
// as tool turns.
func TestMessagesTools(t *testing.T) {
	ts := toolServer(t)
	var defs []struct {
		Function struct {
			Name, Description string
			Parameters        struct {
				Properties map[string]any
				Required   []string
				Extra      bool `json:"additionalProperties"`
			}
		}
	}
	if err := json.Unmarshal([]byte(weatherTools), &defs); err != nil {
		t.Fatal(err)
	}
	var tools []anthropic.ToolUnionParam
	for _, d := range defs {
		tools = append(tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: d.Function.Name, Description: anthropic.String(d.Function.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: d.Function.Parameters.Properties, Required: d.Function.Parameters.Required,
				ExtraFields: map[string]any{"additionalProperties": false}}}})
	}
	c := ts.anthropic()
	params := anthropic.MessageNewParams{Model: "qwen", MaxTokens: 300, Temperature: anthropic.Float(0), Tools: tools,
		ToolChoice: anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: "get_weather"}},
		Messages:   []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?"))}}
	msg, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	var use anthropic.ContentBlockUnion
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			use = b
		}
	}
	if msg.StopReason != anthropic.StopReasonToolUse || use.Name != "get_weather" || use.ID == "" {
		t.Fatalf("%s", msg.RawJSON())
	}
	checkToolArgs(t, "anthropic", use.Name, string(use.Input))

	acc, types := streamMessage(t, c, params)
	var streamed anthropic.ContentBlockUnion
	for _, b := range acc.Content {
		if b.Type == "tool_use" {
			streamed = b
		}
	}
	if acc.StopReason != anthropic.StopReasonToolUse || streamed.Name != "get_weather" || !jsonEqual(streamed.Input, use.Input) {
		t.Errorf("streamed %s, unstreamed %s", acc.RawJSON(), msg.RawJSON())
	}
	if !strings.Contains(strings.Join(types, " "), "content_block_delta") {
		t.Errorf("events %v", types)
	}

	short, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "qwen", MaxTokens: 2, Tools: tools,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?"))}})
	if err != nil {
		t.Fatal(err)
	}
	var input map[string]any
	json.Unmarshal(use.Input, &input)
	long, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "qwen", MaxTokens: 2, Tools: tools,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?")),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock(use.ID, input, use.Name)),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, `{"temperature": 22}`, false))}})
	if err != nil || long.Usage.InputTokens <= short.Usage.InputTokens+20 {
		t.Errorf("history: %v, %d input tokens (without it %d)", err, long.Usage.InputTokens, short.Usage.InputTokens)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// Errors come in Anthropic's shape, which anthropic-sdk-go reads as
// *anthropic.Error with the status and the error type: a missing
// max_tokens, an image block and an unknown model.
func TestMessagesErrors(t *testing.T) {
	ts := tinyResponses(t)
	c := ts.anthropic()
	user := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Once"))}
	check := func(what string, err error, status int, typ, inMsg string) {
		t.Helper()
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != status || string(ae.Type()) != typ || !strings.Contains(ae.RawJSON(), inMsg) {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "nope", MaxTokens: 4, Messages: user})
	check("unknown model", err, 404, "not_found_error", `\"nope\"`)
	_, err = c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "tinystories", MaxTokens: 4,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo="))}})
	check("image", err, 400, "invalid_request_error", "messages[0].content[0].type")

	// max_tokens is required: the SDK always sends it, so raw HTTP.
	code, _, b := post(t, ts.URL+"/v1/messages", `{"model":"tinystories","messages":[{"role":"user","content":"Once"}]}`, "anthropic-version", "2023-06-01")
	var env struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if code != 400 || json.Unmarshal(b, &env) != nil || env.Type != "error" || env.Error.Type != "invalid_request_error" || !strings.Contains(env.Error.Message, "max_tokens") {
		t.Errorf("no max_tokens: %d %s", code, b)
	}
	for _, tc := range []struct{ body, field string }{
		{`"thinking":{"type":"enabled"}`, "thinking.budget_tokens"},
		{`"thinking":{"type":"sometimes"}`, "thinking.type"},
		{`"tools":[{"type":"web_search_20250305","name":"web_search"}]`, "tools[0].type"},
		{`"top_k":-1`, "top_k"},
	} {
		code, _, b := post(t, ts.URL+"/v1/messages", fmt.Sprintf(`{"model":"tinystories","max_tokens":4,"messages":[{"role":"user","content":"Once"}],%s}`, tc.body))
		if code != 400 || !strings.Contains(string(b), `"invalid_request_error"`) || !strings.Contains(string(b), tc.field) {
			t.Errorf("%s: %d %s", tc.field, code, b)
		}
	}
}

// With an API key, Anthropic's clients are let in by x-api-key (as they
// send it) and refused in Anthropic's shape without it.
func TestMessagesAPIKey(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	ts := start(t, Options{ModelDirs: []string{root}, APIKey: "sekrit", Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
	user := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Once"))}
	good, bad := ts.anthropic(aoption.WithAPIKey("sekrit")), ts.anthropic(aoption.WithAPIKey("wrong"))
	msg, err := good.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "tinystories", MaxTokens: 2, Messages: user})
	if err != nil || msg.Usage.OutputTokens != 2 {
		t.Fatalf("x-api-key: %v", err)
	}
	_, err = bad.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "tinystories", MaxTokens: 2, Messages: user})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Type() != "authentication_error" {
		t.Errorf("wrong key: %v", err)
	}
}

// The stream is framed as Anthropic's: each data line's type is the
// event: line before it.
func TestMessagesStreamFraming(t *testing.T) {
	ts := tinyResponses(t)
	code, _, b := post(t, ts.URL+"/v1/messages", `{"model":"tinystories","max_tokens":3,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"Once"}]}]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	var name string
	var names []string
	n := 0
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			name = v
			names = append(names, v)
			continue
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct{ Type string }
		if json.Unmarshal([]byte(data), &ev) != nil || ev.Type != name {
			t.Fatalf("event %q: %s", name, data)
		}
		n++
	}
	if n < 7 || n != len(names) || !strings.HasPrefix(strings.Join(names, " "), "message_start content_block_start ping content_block_delta") {
		t.Errorf("%d events:\n%s", n, b)
	}
}

// count_tokens counts the prompt as a message's usage does.
func TestMessagesCountTokens(t *testing.T) {
	ts := tinyResponses(t)
	c := ts.anthropic()
	user := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Once upon a time"))}
	sys := []anthropic.TextBlockParam{{Text: "Tell a story."}}
	msg, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "tinystories", MaxTokens: 2, Messages: user, System: sys})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "tinystories", Messages: user,
		System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: sys}})
	if err != nil || n.InputTokens != msg.Usage.InputTokens || n.InputTokens == 0 {
		t.Errorf("count_tokens %v %+v, the message's usage says %d", err, n, msg.Usage.InputTokens)
	}
}

// On the NPU lane (the fake vendor runtime) the routes answer as chat
// does, and what the lane cannot do is refused naming the field as each
// API spells it (lanefields.go's table, shared with chat completions).
func TestResponsesAndMessagesOnAxclLane(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "npu", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	code, _, b := post(t, ts.URL+"/v1/responses", `{"model":"npu","input":"hi","max_output_tokens":4}`)
	if code != 200 || !strings.Contains(string(b), `"output_text"`) {
		t.Errorf("responses on axcl: %d %s", code, b)
	}
	code, _, b = post(t, ts.URL+"/v1/messages", `{"model":"npu","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 || !strings.Contains(string(b), `"text"`) {
		t.Errorf("messages on axcl: %d %s", code, b)
	}
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/responses", `{"model":"npu","input":"hi","text":{"format":{"type":"json_object"}}}`, "text.format"},
		{"/v1/responses", `{"model":"npu","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`, "tools"},
		{"/v1/messages", `{"model":"npu","max_tokens":4,"messages":[{"role":"user","content":"hi"}],"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`, "output_config.format"},
		{"/v1/messages", `{"model":"npu","max_tokens":4,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`, "tools"},
	} {
		code, _, b := post(t, ts.URL+tc.path, tc.body)
		if code != 400 || !strings.Contains(string(b), tc.param+" is not supported on the axcl lane") ||
			tc.path == "/v1/responses" && !strings.Contains(string(b), `"param":"`+tc.param+`"`) {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, code, b)
		}
	}
}

// A generation that fails after the stream's head has gone ends with an
// error event, which anthropic-sdk-go reports as the stream's error;
// unstreamed, the same request is a 400 in Anthropic's shape.
func TestMessagesStreamFailure(t *testing.T) {
	ts := tinyResponses(t)
	c := ts.anthropic()
	params := anthropic.MessageNewParams{Model: "tinystories", MaxTokens: 20,
		Messages:     []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Once"))},
		OutputConfig: anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: map[string]any{"type": "object"}}}}
	_, err := c.Messages.New(context.Background(), params)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Type() != "invalid_request_error" || !strings.Contains(ae.RawJSON(), "structured output") {
		t.Errorf("unstreamed: %v", err)
	}
	stream := c.Messages.NewStreaming(context.Background(), params)
	var types []string
	for stream.Next() {
		types = append(types, stream.Current().Type)
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "structured output") || strings.Join(types, " ") != "message_start" {
		t.Errorf("stream: events %v, error %v", types, err)
	}
}
