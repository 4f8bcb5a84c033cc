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

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// tinyResponses serves the tinystories fixture on the cpu lane alone.
func tinyResponses(t *testing.T) *testServer {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	return start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
}

// responsesStream reads a Responses stream through openai-go: the events
// in order (their sequence numbers must count from 0), the text of the
// deltas, and the last lifecycle event's response.
func responsesStream(t *testing.T, ts *testServer, params responses.ResponseNewParams) (types []string, text string, last responses.Response) {
	t.Helper()
	c := ts.client()
	stream := c.Responses.NewStreaming(context.Background(), params)
	for stream.Next() {
		ev := stream.Current()
		if int(ev.SequenceNumber) != len(types) {
			t.Errorf("event %d (%s) has sequence_number %d", len(types), ev.Type, ev.SequenceNumber)
		}
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed", "response.incomplete", "response.failed":
			last = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return types, text, last
}

// A string input answers as the same request through chat completions
// does (same template, sampling and stop), as a response object with one
// message item of output_text, usage, and status incomplete with
// incomplete_details when max_output_tokens cut it; streamed, the events
// come in the documented order, numbered, and add up to the same text.
func TestResponsesThroughOpenAIClient(t *testing.T) {
	ts := tinyResponses(t)
	c := ts.client()
	ctx := context.Background()
	chat, err := ts.chat().New(ctx, openai.ChatCompletionNewParams{Model: "tinystories", MaxTokens: openai.Int(12), Temperature: openai.Float(0),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}})
	if err != nil {
		t.Fatal(err)
	}
	params := responses.ResponseNewParams{Model: "tinystories", MaxOutputTokens: openai.Int(12), Temperature: openai.Float(0),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Once upon a time")}}
	resp, err := c.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.ID, "resp_") || resp.Object != "response" || resp.Status != "incomplete" ||
		resp.IncompleteDetails.Reason != "max_output_tokens" || len(resp.Output) != 1 {
		t.Fatalf("%s", resp.RawJSON())
	}
	msg := resp.Output[0]
	if msg.Type != "message" || msg.Role != "assistant" || !strings.HasPrefix(msg.ID, "msg_") || len(msg.Content) != 1 || msg.Content[0].Type != "output_text" {
		t.Fatalf("output item %s", msg.RawJSON())
	}
	if got := resp.OutputText(); got == "" || got != chat.Choices[0].Message.Content {
		t.Errorf("output_text %q, chat completions answered %q", got, chat.Choices[0].Message.Content)
	}
	u := resp.Usage
	if u.InputTokens != chat.Usage.PromptTokens || u.OutputTokens != 12 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage %s, chat's %+v", u.RawJSON(), chat.Usage)
	}
	if strings.Contains(resp.RawJSON(), `"output_text"`+":") {
		t.Errorf("output_text is the SDK's convenience, not a wire field: %s", resp.RawJSON())
	}

	types, text, last := responsesStream(t, ts, params)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	if len(types) < 9 || strings.Join(types[:4], " ") != strings.Join(want, " ") {
		t.Fatalf("events %v", types)
	}
	tail := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"}
	if strings.Join(types[len(types)-4:], " ") != strings.Join(tail, " ") {
		t.Errorf("events end %v", types)
	}
	for _, typ := range types[4 : len(types)-4] {
		if typ != "response.output_text.delta" {
			t.Errorf("event %s among the deltas", typ)
		}
	}
	if text != resp.OutputText() || last.OutputText() != text || last.Status != "incomplete" || last.Usage.OutputTokens != 12 {
		t.Errorf("streamed %q (final %q, %s), unstreamed %q", text, last.OutputText(), last.Status, resp.OutputText())
	}

	// instructions are the system turn: the fallback template shows them.
	params.Instructions = openai.String("Tell a story.")
	withSys, err := c.Responses.New(ctx, params)
	if err != nil || withSys.Usage.InputTokens <= u.InputTokens {
		t.Errorf("instructions: %v, %d prompt tokens (without: %d)", err, withSys.Usage.InputTokens, u.InputTokens)
	}

	// An answer that ends by itself is completed.
	params = responses.ResponseNewParams{Model: "tinystories", MaxOutputTokens: openai.Int(400), Temperature: openai.Float(0),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Once upon a time")}}
	full, err := c.Responses.New(ctx, params)
	if err != nil || full.Status != "completed" || full.IncompleteDetails.Reason != "" || full.Usage.OutputTokens >= 400 {
		t.Errorf("%v %s", err, full.RawJSON())
	}
}

// The stream is framed as OpenAI's: an event: line naming each event's
// type before its data, no [DONE].
func TestResponsesStreamFraming(t *testing.T) {
	ts := tinyResponses(t)
	code, h, b := post(t, ts.URL+"/v1/responses", `{"model":"tinystories","input":[{"role":"user","content":[{"type":"input_text","text":"Once"}]}],"max_output_tokens":3,"stream":true}`)
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v %s", code, h, b)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	var name string
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type string
			Seq  *int `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Type != name || ev.Seq == nil || *ev.Seq != n {
			t.Fatalf("event %d %q: %s", n, name, data)
		}
		n++
		name = ""
	}
	if n < 8 || bytes.Contains(b, []byte("[DONE]")) {
		t.Errorf("%d events:\n%s", n, b)
	}
}

// text.format json_schema constrains the answer as chat's
// response_format does: the tinystories model, which writes stories,
// answers a document that validates.
func TestResponsesJSONSchema(t *testing.T) {
	root := t.TempDir()
	jsonTinyDir(t, root, "tinystories") // JSON's brackets in its vocabulary
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
	var schema map[string]any
	if err := json.Unmarshal([]byte(personSchema), &schema); err != nil {
		t.Fatal(err)
	}
	c := ts.client()
	params := responses.ResponseNewParams{Model: "tinystories", MaxOutputTokens: openai.Int(400), Temperature: openai.Float(0),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Once upon a time")},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "person", Schema: schema, Strict: openai.Bool(true)}}}}
	resp, err := c.Responses.New(context.Background(), params)
	if err != nil || resp.Status != "completed" {
		t.Fatalf("%v %+v", err, resp)
	}
	checkPerson(t, "responses json_schema", resp.OutputText())
	_, text, _ := responsesStream(t, ts, params)
	if text != resp.OutputText() {
		t.Errorf("streamed %q, unstreamed %q", text, resp.OutputText())
	}

	params.Text.Format = responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	resp, err = c.Responses.New(context.Background(), params)
	var m map[string]any
	if err != nil || json.Unmarshal([]byte(resp.OutputText()), &m) != nil {
		t.Errorf("json_object: %v %q", err, resp.OutputText())
	}
}

// Function tools and a named tool_choice make a function_call item with
// call_id, name and arguments that validate, streamed or not; a history
// of function_call and function_call_output items renders as tool turns.
func TestResponsesFunctionTools(t *testing.T) {
	ts := toolServer(t)
	var defs []struct {
		Function struct {
			Name, Description string
			Parameters        map[string]any
		}
	}
	if err := json.Unmarshal([]byte(weatherTools), &defs); err != nil {
		t.Fatal(err)
	}
	var tools []responses.ToolUnionParam
	for _, d := range defs {
		tools = append(tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: d.Function.Name,
			Description: openai.String(d.Function.Description), Parameters: d.Function.Parameters, Strict: openai.Bool(true)}})
	}
	params := responses.ResponseNewParams{Model: "qwen", MaxOutputTokens: openai.Int(300), Temperature: openai.Float(0), Tools: tools,
		Input:      responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Oslo?")},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}}}
	c := ts.client()
	resp, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseOutputItemUnion
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			call = it
		}
	}
	if resp.Status != "completed" || call.Name != "get_weather" || !strings.HasPrefix(call.CallID, "call_") || !strings.HasPrefix(call.ID, "fc_") || call.Status != "completed" {
		t.Fatalf("%s", resp.RawJSON())
	}
	checkToolArgs(t, "responses", call.Name, call.Arguments.OfString)

	types, _, last := responsesStream(t, ts, params)
	var streamed responses.ResponseOutputItemUnion
	for _, it := range last.Output {
		if it.Type == "function_call" {
			streamed = it
		}
	}
	if streamed.Name != "get_weather" || streamed.Arguments.OfString != call.Arguments.OfString {
		t.Errorf("streamed %s, unstreamed %s", streamed.RawJSON(), call.RawJSON())
	}
	if !strings.Contains(strings.Join(types, " "), "response.output_item.added response.function_call_arguments.delta") ||
		!strings.Contains(strings.Join(types, " "), "response.function_call_arguments.done response.output_item.done response.completed") {
		t.Errorf("events %v", types)
	}

	// History: the call and its output, as a client sends them back.
	short, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "qwen", MaxOutputTokens: openai.Int(2), Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Oslo?")}})
	if err != nil {
		t.Fatal(err)
	}
	history := fmt.Sprintf(`{"model":"qwen","max_output_tokens":2,"tools":%s,"input":[{"role":"user","content":"Weather in Oslo?"},
		{"type":"function_call","call_id":%q,"name":"get_weather","arguments":%q},
		{"type":"function_call_output","call_id":%q,"output":"{\"temperature\": 22}"}]}`, toolsJSON(t, tools), call.CallID, call.Arguments.OfString, call.CallID)
	code, _, b := post(t, ts.URL+"/v1/responses", history)
	var long struct {
		Usage struct {
			InputTokens int64 `json:"input_tokens"`
		}
	}
	if code != 200 || json.Unmarshal(b, &long) != nil || long.Usage.InputTokens <= short.Usage.InputTokens+20 {
		t.Errorf("history: %d %s (without it: %d input tokens)", code, b, short.Usage.InputTokens)
	}
}

func toolsJSON(t *testing.T, tools []responses.ToolUnionParam) string {
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// What the stateless server does not do is a 400 naming the field, read
// by openai-go as *openai.Error; an unknown model is a 404.
func TestResponsesRefusals(t *testing.T) {
	ts := tinyResponses(t)
	c := ts.client()
	in := responses.ResponseNewParamsInputUnion{OfString: openai.String("Once")}
	for _, tc := range []struct {
		params responses.ResponseNewParams
		param  string
	}{
		{responses.ResponseNewParams{Model: "tinystories", Input: in, PreviousResponseID: openai.String("resp_123")}, "previous_response_id"},
		{responses.ResponseNewParams{Model: "tinystories", Input: in, Store: openai.Bool(true)}, "store"},
		{responses.ResponseNewParams{Model: "tinystories", Input: in, Background: openai.Bool(true)}, "background"},
		{responses.ResponseNewParams{Model: "tinystories", Input: in, Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: "web_search"}}}}, "tools[0].type"},
		{responses.ResponseNewParams{Model: "tinystories", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("https://example.com/a.png"), Detail: "auto"}}}, "user")}}}, "input[0].content[0].type"},
		{responses.ResponseNewParams{Model: "tinystories", Input: in, MaxOutputTokens: openai.Int(-1)}, "max_output_tokens"},
		{responses.ResponseNewParams{Model: "tinystories", Input: in, Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "zip", Schema: map[string]any{"type": "string", "pattern": "^[0-9]{5}$"}}}}}, "text.format"},
		{responses.ResponseNewParams{Model: "tinystories", Input: in, ToolChoice: responses.ResponseNewParamsToolChoiceUnion{
			OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}}}, "tool_choice"},
	} {
		_, err := c.Responses.New(context.Background(), tc.params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != tc.param || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, tc.param) {
			t.Errorf("%s: %v", tc.param, err)
		}
	}
	// Stored state asked for nothing passes.
	if _, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "tinystories", Input: in, Store: openai.Bool(false), MaxOutputTokens: openai.Int(2)}); err != nil {
		t.Errorf("store false: %v", err)
	}
	_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "nope", Input: in})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(apiErr.Message, `"nope"`) {
		t.Errorf("unknown model: %v", err)
	}
}

// A generation that fails after the stream's head has gone ends the
// stream with an error event and response.failed (the tinystories
// vocabulary has no "{", so a JSON answer fails at its first token);
// unstreamed, the same request is a 400.
func TestResponsesStreamFailure(t *testing.T) {
	ts := tinyResponses(t)
	params := responses.ResponseNewParams{Model: "tinystories", MaxOutputTokens: openai.Int(20),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Once")},
		Text:  responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}}
	c := ts.client()
	_, err := c.Responses.New(context.Background(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "structured output") {
		t.Errorf("unstreamed: %v", err)
	}
	stream := c.Responses.NewStreaming(context.Background(), params)
	var types []string
	var failed responses.Response
	var msg string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "error":
			msg = ev.Message
		case "response.failed":
			failed = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(types, " ") != "response.created response.in_progress error response.failed" || !strings.Contains(msg, "structured output") ||
		failed.Status != "failed" || failed.Error.Message != msg {
		t.Errorf("events %v, error %q, response %s", types, msg, failed.RawJSON())
	}
}
