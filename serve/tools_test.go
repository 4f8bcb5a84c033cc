package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// weatherTools are the tools the tests offer. Every string and array is
// bounded, so a model that never ends a string still ends in time.
const weatherTools = `[
 {"type":"function","function":{"name":"get_weather","description":"Current weather in a city","parameters":{"type":"object",
   "properties":{"city":{"type":"string","minLength":1,"maxLength":24},"unit":{"type":"string","enum":["celsius","fahrenheit"]},
   "days":{"type":"array","items":{"type":"integer"},"maxItems":3}},
   "required":["city","unit"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"get_time","description":"Current time in a zone","parameters":{"type":"object",
   "properties":{"zone":{"type":"string","minLength":1,"maxLength":16}},"required":["zone"],"additionalProperties":false}}}]`

// checkToolArgs fails unless args are a JSON object that validates
// against name's parameters in weatherTools: decoded strictly, each
// keyword checked.
func checkToolArgs(t *testing.T, what, name, args string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	var err error
	switch name {
	case "get_weather":
		var a struct {
			City *string   `json:"city"`
			Unit *string   `json:"unit"`
			Days *[]*int64 `json:"days"`
		}
		err = dec.Decode(&a)
		switch {
		case err != nil:
		case a.City == nil || a.Unit == nil:
			err = errors.New("city or unit missing")
		case utf8.RuneCountInString(*a.City) < 1 || utf8.RuneCountInString(*a.City) > 24:
			err = errors.New("city outside minLength/maxLength")
		case *a.Unit != "celsius" && *a.Unit != "fahrenheit":
			err = errors.New("unit not in the enum")
		case a.Days != nil && len(*a.Days) > 3:
			err = errors.New("more days than maxItems")
		}
	case "get_time":
		var a struct {
			Zone *string `json:"zone"`
		}
		err = dec.Decode(&a)
		if err == nil && (a.Zone == nil || utf8.RuneCountInString(*a.Zone) < 1 || utf8.RuneCountInString(*a.Zone) > 16) {
			err = errors.New("zone missing or outside minLength/maxLength")
		}
	default:
		err = fmt.Errorf("no tool %q was offered", name)
	}
	if err == nil && dec.More() {
		err = errors.New("data after the arguments")
	}
	if err != nil {
		t.Errorf("%s: %s(%s) does not validate: %v", what, name, args, err)
	}
}

// toolTemplates are real chat templates of each family (format/
// chattemplate's fixtures) the tinystories test model is given.
var toolTemplates = map[string]string{
	"qwen":    "Qwen-Qwen2.5-7B-Instruct.jinja",
	"llama":   "meta-llama-Llama-3.2-3B-Instruct.jinja",
	"mistral": "mistralai-Mistral-Nemo-Instruct-2407.jinja",
	"small":   "Mistral-Small-3.2-24B-Instruct-2506.jinja",
}

// templatedTinyDir is jsonTinyDir's model (tinystories with JSON's
// brackets in its vocabulary) with a family's real chat template: the
// trained model, which has never seen a tool, shown tools as that family
// is. Its context goes from 512 to 4096 positions (RoPE goes on past the
// trained length; the grammar, not the model's skill, makes the calls):
// its vocabulary spells JSON a character at a time, so the real
// templates' tool prompts take 500–1500 tokens.
func templatedTinyDir(t testing.TB, root, name, template string) string {
	t.Helper()
	dir := jsonTinyDir(t, root, name)
	conf := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(conf)
	var c map[string]any
	if err != nil || json.Unmarshal(b, &c) != nil {
		t.Fatalf("%s: %v", conf, err)
	}
	c["max_position_embeddings"] = 4096
	b, _ = json.Marshal(c)
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("../format/chattemplate/testdata/templates", template))
	if err != nil {
		t.Skipf("template fixture absent: %v", err)
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	b, err = os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"] = string(src)
	out, _ := json.Marshal(cfg)
	os.Remove(cfgPath) // a link to the fixture's
	if err := os.WriteFile(cfgPath, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// toolServer serves one templated tinystories model per family.
func toolServer(t *testing.T) *testServer {
	root := t.TempDir()
	for name, tmpl := range toolTemplates {
		templatedTinyDir(t, root, name, tmpl)
	}
	return start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
}

// sseCall is a streamed answer put together as OpenAI's clients do: the
// content, and per index the call's id, type, name and concatenated
// arguments, with the finish reason.
type sseCall struct {
	content string
	calls   []struct{ id, typ, name, args string }
	finish  string
	roles   int
}

func readSSE(t *testing.T, body []byte) sseCall {
	t.Helper()
	var out sseCall
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Error   any
			Choices []struct {
				Delta struct {
					Role      string
					Content   *string
					ToolCalls []struct {
						Index    *int
						ID, Type string
						Function struct{ Name, Arguments *string }
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil || c.Error != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Role != "" {
				out.roles++
			}
			if ch.Delta.Content != nil {
				out.content += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil || tc.Function.Arguments == nil {
					t.Fatalf("tool call delta without index or arguments: %s", data)
				}
				i := *tc.Index
				if i == len(out.calls) { // a new call: its first delta has id, type and name
					if tc.ID == "" || tc.Type != "function" || tc.Function.Name == nil || *tc.Function.Name == "" {
						t.Fatalf("first delta of call %d lacks id, type or name: %s", i, data)
					}
					out.calls = append(out.calls, struct{ id, typ, name, args string }{tc.ID, tc.Type, *tc.Function.Name, ""})
				} else if i != len(out.calls)-1 || tc.ID != "" || tc.Function.Name != nil {
					t.Fatalf("delta for call %d while call %d is open, or repeating its id/name: %s", i, len(out.calls)-1, data)
				}
				out.calls[i].args += *tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				out.finish = *ch.FinishReason
			}
		}
	}
	return out
}

// The tinystories model writes stories and has never seen a tool. Shown
// tools through each family's real chat template (Qwen2.5's Hermes
// format, Llama 3.2's JSON, Mistral Nemo's [TOOL_CALLS] and Mistral Small
// 3.2's [ARGS]) with tool_choice naming a function, or "required", it
// answers with one call, in OpenAI's tool_calls, whose arguments
// validate against that function's schema: finish_reason "tool_calls",
// content null; streamed, the same call arrives as deltas clients put
// together (index, id, type and name first, then arguments).
func TestToolChoiceOnTinyStories(t *testing.T) {
	ts := toolServer(t)
	for model := range toolTemplates {
		for _, choice := range []string{`{"type":"function","function":{"name":"get_time"}}`, `"required"`} {
			body := fmt.Sprintf(`{"model":%q,"max_tokens":300,"temperature":0,"messages":[{"role":"user","content":"What time is it in Paris?"}],"tools":%s,"tool_choice":%s`,
				model, weatherTools, choice)
			what := model + " " + choice
			code, _, b := post(t, ts.URL+"/v1/chat/completions", body+`}`)
			var resp struct {
				Choices []struct {
					Message struct {
						Content   *string
						ToolCalls []struct {
							ID, Type string
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			if code != 200 || json.Unmarshal(b, &resp) != nil || len(resp.Choices) != 1 {
				t.Fatalf("%s: %d %s", what, code, b)
			}
			ch := resp.Choices[0]
			if ch.FinishReason != "tool_calls" || ch.Message.Content != nil || len(ch.Message.ToolCalls) != 1 {
				t.Fatalf("%s: %s", what, b)
			}
			call := ch.Message.ToolCalls[0]
			if call.Type != "function" || (model == "mistral" || model == "small") != (len(call.ID) == 9) ||
				(model == "qwen" || model == "llama") != strings.HasPrefix(call.ID, "call_") {
				t.Errorf("%s: call id %q type %q", what, call.ID, call.Type)
			}
			if strings.HasPrefix(choice, "{") && call.Function.Name != "get_time" {
				t.Errorf("%s: called %s", what, call.Function.Name)
			}
			checkToolArgs(t, what, call.Function.Name, call.Function.Arguments)
			t.Logf("%s: %s %s(%s)", what, call.ID, call.Function.Name, call.Function.Arguments)

			code, _, b = post(t, ts.URL+"/v1/chat/completions", body+`,"stream":true}`)
			s := readSSE(t, b)
			if code != 200 || s.finish != "tool_calls" || s.content != "" || s.roles != 1 || len(s.calls) != 1 {
				t.Fatalf("%s stream: %d %+v\n%s", what, code, s, b)
			}
			if got := s.calls[0]; got.name != call.Function.Name || got.args != call.Function.Arguments {
				t.Errorf("%s: streamed %s(%s), unstreamed %s(%s)", what, got.name, got.args, call.Function.Name, call.Function.Arguments)
			}
		}
	}
}

// Ollama's /api/chat answers the same calls in message.tool_calls, with
// the arguments as an object (tool_choice is an edgectl extension there;
// Ollama's models decide by themselves), streamed and not.
func TestOllamaToolCallsOnTinyStories(t *testing.T) {
	ts := toolServer(t)
	for _, stream := range []bool{false, true} {
		code, _, b := post(t, ts.URL+"/api/chat", fmt.Sprintf(`{"model":"qwen","stream":%v,"messages":[{"role":"user","content":"Weather in Paris?"}],
			"options":{"temperature":0,"num_predict":300},"tools":%s,"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`, stream, weatherTools))
		var calls []any
		var text string
		lines := ndjson(t, b)
		for _, line := range lines {
			msg, _ := line["message"].(map[string]any)
			s, _ := msg["content"].(string)
			text += s
			if c, ok := msg["tool_calls"].([]any); ok {
				calls = append(calls, c...)
			}
		}
		if code != 200 || len(calls) != 1 || text != "" || lines[len(lines)-1]["done_reason"] != "stop" {
			t.Fatalf("stream %v: %d %s", stream, code, b)
		}
		fn, _ := calls[0].(map[string]any)["function"].(map[string]any)
		args, isObject := fn["arguments"].(map[string]any)
		if fn["name"] != "get_weather" || !isObject || fn["index"] != 0.0 {
			t.Fatalf("stream %v: call %v", stream, calls[0])
		}
		raw, _ := json.Marshal(args)
		checkToolArgs(t, fmt.Sprintf("/api/chat stream %v", stream), "get_weather", string(raw))
	}
}

// The official OpenAI client sends tools and a named tool_choice and
// reads the call back, whole and streamed (its ChatCompletionAccumulator
// puts the deltas together and reports the finished call).
func TestToolCallsThroughOpenAIClient(t *testing.T) {
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
	var tools []openai.ChatCompletionToolUnionParam
	for _, d := range defs {
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: d.Function.Name,
			Description: openai.String(d.Function.Description), Parameters: d.Function.Parameters}))
	}
	params := openai.ChatCompletionNewParams{Model: "qwen", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
		Tools: tools, MaxTokens: openai.Int(300), Temperature: openai.Float(0),
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}}}}
	resp, err := ts.chat().New(context.Background(), params)
	if err != nil || len(resp.Choices) != 1 {
		t.Fatalf("%v %+v", err, resp)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "get_weather" {
		t.Fatalf("%+v", ch)
	}
	whole := ch.Message.ToolCalls[0]
	checkToolArgs(t, "openai client", "get_weather", whole.Function.Arguments)

	stream := ts.chat().NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	var finished []openai.FinishedChatCompletionToolCall
	for stream.Next() {
		acc.AddChunk(stream.Current())
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "tool_calls" || len(acc.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("accumulated %+v", acc.ChatCompletion)
	}
	got := acc.Choices[0].Message.ToolCalls[0]
	if got.Function.Name != "get_weather" || got.Function.Arguments != whole.Function.Arguments || !strings.HasPrefix(got.ID, "call_") {
		t.Errorf("streamed %+v, unstreamed %+v", got.Function, whole.Function)
	}
	if len(finished) != 1 || finished[0].Arguments != whole.Function.Arguments {
		t.Errorf("JustFinishedToolCall reported %+v", finished)
	}
}

// tool_choice "none" shows no tools and parses no calls: the answer is
// the model's text, finish_reason "stop", as without tools; a history of
// an assistant's calls and the tool results renders through each
// family's template (Mistral's demand 9-character ids: OpenAI's call_…
// ids are mapped), in OpenAI's shape (arguments text) and Ollama's
// (arguments an object, tool_name).
func TestToolChoiceNoneAndToolHistory(t *testing.T) {
	ts := toolServer(t)
	plain := func(model, extra string) string {
		t.Helper()
		code, _, b := post(t, ts.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"max_tokens":20,"temperature":0,"messages":[{"role":"user","content":"Once upon a time"}]%s}`, model, extra))
		var resp struct {
			Choices []struct {
				Message struct {
					Content   string
					ToolCalls []any `json:"tool_calls"`
				}
				FinishReason string `json:"finish_reason"`
			}
		}
		if code != 200 || json.Unmarshal(b, &resp) != nil || len(resp.Choices) != 1 || len(resp.Choices[0].Message.ToolCalls) != 0 {
			t.Fatalf("%s %s: %d %s", model, extra, code, b)
		}
		return resp.Choices[0].Message.Content + " / " + resp.Choices[0].FinishReason
	}
	for model := range toolTemplates {
		if a, b := plain(model, ""), plain(model, `,"tools":`+weatherTools+`,"tool_choice":"none"`); a != b || a == "" {
			t.Errorf("%s: tool_choice none answered %q, no tools %q", model, b, a)
		}
	}

	history := `[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_8f3kD0aZq1xYw2vU7tR5sP4e","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}]},
		{"role":"tool","tool_call_id":"call_8f3kD0aZq1xYw2vU7tR5sP4e","content":"{\"temperature\": 22}"}]`
	ohistory := `[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris","unit":"celsius"}}}]},
		{"role":"tool","tool_name":"get_weather","content":"{\"temperature\": 22}"}]`
	for model := range toolTemplates {
		var short, long struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			}
		}
		_, _, b := post(t, ts.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"max_tokens":2,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":%s}`, model, weatherTools))
		json.Unmarshal(b, &short)
		code, _, b := post(t, ts.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"max_tokens":2,"messages":%s,"tools":%s}`, model, history, weatherTools))
		if code != 200 || json.Unmarshal(b, &long) != nil || long.Usage.PromptTokens <= short.Usage.PromptTokens+20 {
			t.Errorf("%s: OpenAI tool history: %d %s (prompt without it: %d tokens)", model, code, b, short.Usage.PromptTokens)
		}
		// Tools no longer offered, the history still renders (Mistral's ids too).
		if code, _, b := post(t, ts.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"max_tokens":2,"messages":%s,"tools":%s,"tool_choice":"none"}`, model, history, weatherTools)); code != 200 {
			t.Errorf("%s: tool history with tool_choice none: %d %s", model, code, b)
		}
		code, _, b = post(t, ts.URL+"/api/chat", fmt.Sprintf(`{"model":%q,"stream":false,"options":{"num_predict":2},"messages":%s,"tools":%s}`, model, ohistory, weatherTools))
		var ol struct {
			PromptEvalCount int `json:"prompt_eval_count"`
		}
		if code != 200 || json.Unmarshal(b, &ol) != nil || ol.PromptEvalCount <= short.Usage.PromptTokens+20 {
			t.Errorf("%s: Ollama tool history: %d %s", model, code, b)
		}
	}
}

// What a request gets wrong about tools is a 400 naming the field; the
// NPU lane refuses tools (it cannot call them) unless tool_choice is
// "none"; a template without a tool format refuses them.
func TestToolRefusals(t *testing.T) {
	root := t.TempDir()
	templatedTinyDir(t, root, "qwen", toolTemplates["qwen"])
	templatedTinyDir(t, root, "gemma", "google-gemma-2-2b-it.jinja")
	axDir(t, root, "npu", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	msgs := `"messages":[{"role":"user","content":"x"}]`
	for _, tc := range []struct{ body, param, want string }{
		{`"model":"qwen",` + msgs + `,"tools":{"a":1}`, "tools", "tools must be an array"},
		{`"model":"qwen",` + msgs + `,"tools":[{"type":"function","function":{"name":"a b"}}]`, "tools", `tools[0].function.name "a b": want 1 to 64 letters`},
		{`"model":"qwen",` + msgs + `,"tools":` + weatherTools + `,"tool_choice":"always"`, "tool_choice", `tool_choice "always": want "none", "auto", "required"`},
		{`"model":"qwen",` + msgs + `,"tools":` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}`, "tool_choice", `names function "nope", which tools does not offer`},
		{`"model":"qwen",` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"d":{"type":"string","format":"date"}}}}}],"tool_choice":"required"`,
			"tools", `tools[0].function.parameters: schema keyword "format" at /properties/d`},
		{`"model":"qwen",` + msgs + `,"tools":` + weatherTools + `,"tool_choice":"required","response_format":{"type":"json_object"}`, "tool_choice", "both constrain the answer"},
		{`"model":"gemma",` + msgs + `,"tools":` + weatherTools, "tools", "gemma:latest's chat template writes tool calls in no format edgectl knows"},
		{`"model":"npu",` + msgs + `,"tools":` + weatherTools, "tools", "tools is not supported on the axcl lane"},
		{`"model":"qwen","messages":[{"role":"assistant","content":"","tool_calls":[{"id":"x","type":"function","function":{"arguments":"{}"}}]}]`, "messages", "messages[0].tool_calls[0].function.name is required"},
	} {
		code, _, b := post(t, ts.URL+"/v1/chat/completions", `{`+tc.body+`}`)
		var env struct {
			Error struct{ Message, Param string }
		}
		json.Unmarshal(b, &env)
		if code != 400 || env.Error.Param != tc.param || !strings.Contains(env.Error.Message, tc.want) {
			t.Errorf("%s: %d %s\nwant %s: %q", tc.body, code, b, tc.param, tc.want)
		}
	}
	// tool_choice "none" offers nothing: every lane takes it.
	if code, _, b := post(t, ts.URL+"/api/chat", `{"model":"npu","stream":false,`+msgs+`,"tools":`+weatherTools+`,"tool_choice":"none"}`); code != 200 {
		t.Errorf("npu with tool_choice none: %d %s", code, b)
	}
	code, _, b := post(t, ts.URL+"/api/chat", `{"model":"qwen",`+msgs+`,"tools":[],"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]}`)
	if code != 400 || !strings.Contains(string(b), "arguments an object") {
		t.Errorf("Ollama string arguments: %d %s", code, b)
	}
	// /api/show says which models take tools.
	post(t, ts.URL+"/api/generate", `{"model":"qwen"}`)
	post(t, ts.URL+"/api/generate", `{"model":"gemma"}`)
	for model, want := range map[string]bool{"qwen": true, "gemma": false} {
		_, _, b := post(t, ts.URL+"/api/show", `{"model":"`+model+`"}`)
		if strings.Contains(string(b), `"tools"`) != want {
			t.Errorf("/api/show %s: capabilities in %s", model, b)
		}
	}
}

// Token log-probabilities still come with every generated token when the
// answer is a call: in the chunks that carry the call's deltas, as many
// entries as tokens, unstreamed and streamed alike.
func TestToolCallLogprobs(t *testing.T) {
	ts := toolServer(t)
	body := `{"model":"qwen","max_tokens":200,"temperature":0,"logprobs":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Time?"}],"tools":` +
		weatherTools + `,"tool_choice":{"type":"function","function":{"name":"get_time"}}`
	code, _, b := post(t, ts.URL+"/v1/chat/completions", body+`}`)
	var whole struct {
		Choices []struct {
			Logprobs struct{ Content []any }
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if code != 200 || json.Unmarshal(b, &whole) != nil || len(whole.Choices[0].Logprobs.Content) != whole.Usage.CompletionTokens || whole.Usage.CompletionTokens == 0 {
		t.Fatalf("%d %s", code, b)
	}
	_, _, b = post(t, ts.URL+"/v1/chat/completions", body+`,"stream":true}`)
	entries := 0
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Logprobs *struct{ Content []any }
			}
		}
		json.Unmarshal([]byte(data), &c)
		for _, ch := range c.Choices {
			if ch.Logprobs != nil {
				entries += len(ch.Logprobs.Content)
			}
		}
	}
	if s := readSSE(t, b); entries != whole.Usage.CompletionTokens || len(s.calls) != 1 || s.finish != "tool_calls" {
		t.Errorf("streamed %d entries for %d tokens; %+v", entries, whole.Usage.CompletionTokens, s)
	}
}
