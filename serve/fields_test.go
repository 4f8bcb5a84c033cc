package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Fields edgectl does not implement are refused with a 400 naming them;
// the values that ask for nothing (what clients send by default) pass.
func TestUnsupportedOpenAIFieldsAreRefused(t *testing.T) {
	ts := tinyServer(t)
	chat := `"model":"tinystories","max_tokens":2,"messages":[{"role":"user","content":"Once"}]`
	for _, tc := range []struct{ field, extra string }{
		{"functions", `"functions":[{"name":"f"}]`},
		{"function_call", `"function_call":{"name":"f"}`},
		{"n", `"n":2`},
		{"logit_bias", `"logit_bias":{"50256":-100}`},
	} {
		code, _, b := post(t, ts.URL+"/v1/chat/completions", `{`+chat+`,`+tc.extra+`}`)
		var env struct {
			Error struct{ Message, Param string }
		}
		json.Unmarshal(b, &env)
		if code != 400 || env.Error.Param != tc.field || !strings.HasPrefix(env.Error.Message, tc.field) ||
			!strings.Contains(env.Error.Message, "not supported") {
			t.Errorf("%s: %d %s", tc.extra, code, b)
		}
	}
	for _, tc := range []struct{ field, extra string }{
		{"echo", `"echo":true`},
		{"best_of", `"best_of":2`},
		{"suffix", `"suffix":"end"`},
	} {
		code, _, b := post(t, ts.URL+"/v1/completions", `{"model":"tinystories","prompt":"Once","max_tokens":2,`+tc.extra+`}`)
		if code != 400 || !strings.Contains(string(b), `"param":"`+tc.field+`"`) || !strings.Contains(string(b), "not supported") {
			t.Errorf("completions %s: %d %s", tc.extra, code, b)
		}
	}
	// Implemented fields with values they cannot take name the field too.
	for _, tc := range []struct{ path, extra, field, want string }{
		{"/v1/chat/completions", `"top_logprobs":3`, "top_logprobs", "top_logprobs needs logprobs: true"},
		{"/v1/chat/completions", `"logprobs":true,"top_logprobs":21`, "top_logprobs", "want an integer from 0 to 20"},
		{"/v1/chat/completions", `"logprobs":3`, "logprobs", `field "logprobs" must be true or false, not 3`},
		{"/v1/chat/completions", `"frequency_penalty":2.5`, "frequency_penalty", "want a number from -2 to 2"},
		{"/v1/completions", `"logprobs":21`, "logprobs", `field "logprobs" = 21 is out of range: want an integer from 0 to 20`},
		{"/v1/completions", `"logprobs":1.5`, "logprobs", "out of range"},
		{"/v1/completions", `"logprobs":true`, "logprobs", "out of range"},
		// Tools need a chat template that shows them (tools_test.go has more).
		{"/v1/chat/completions", `"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]`, "tools", "tinystories:latest has no chat template, so it cannot be shown tools"},
		{"/v1/chat/completions", `"tool_choice":"required"`, "tool_choice", `tool_choice "required" needs tools to choose from`},
		{"/v1/chat/completions", `"tool_choice":{"type":"function","function":{"name":"f"}}`, "tool_choice", "needs tools to choose from"},
	} {
		body := `{` + chat + `,` + tc.extra + `}`
		if tc.path == "/v1/completions" {
			body = `{"model":"tinystories","prompt":"Once","max_tokens":2,` + tc.extra + `}`
		}
		code, _, b := post(t, ts.URL+tc.path, body)
		var env struct {
			Error struct{ Message, Param string }
		}
		json.Unmarshal(b, &env)
		if code != 400 || env.Error.Param != tc.field || !strings.Contains(env.Error.Message, tc.want) {
			t.Errorf("%s %s: %d %s\nwant %q", tc.path, tc.extra, code, b, tc.want)
		}
	}
	// The neutral values pass.
	neutral := `"response_format":{"type":"text"},"tools":[],"tool_choice":"none","n":1,"logprobs":false,"top_logprobs":0,` +
		`"frequency_penalty":0,"presence_penalty":0,"logit_bias":{},"functions":null,"parallel_tool_calls":false`
	if code, _, b := post(t, ts.URL+"/v1/chat/completions", `{`+chat+`,`+neutral+`}`); code != 200 {
		t.Errorf("neutral values: %d %s", code, b)
	}
	if code, _, b := post(t, ts.URL+"/v1/completions", `{"model":"tinystories","prompt":"Once","max_tokens":2,"logprobs":null,"echo":false,"best_of":1,"suffix":""}`); code != 200 || strings.Contains(string(b), `"tokens"`) {
		t.Errorf("neutral completion values: %d %s", code, b)
	}
}

// The official client sends only what it is given: plain requests work,
// and a refused field comes back as an *openai.Error naming the param.
func TestOpenAIClientAndRefusedFields(t *testing.T) {
	ts := tinyServer(t)
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}
	resp, err := ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "tinystories", Messages: msgs,
		MaxTokens: openai.Int(3), N: openai.Int(1), Temperature: openai.Float(0), FrequencyPenalty: openai.Float(0), PresencePenalty: openai.Float(0),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}}})
	if err != nil || len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" {
		t.Fatalf("plain request: %v %+v", err, resp)
	}
	// Structured output is implemented (format_test.go), but this model's
	// vocabulary has no '{': a 400 says so rather than text that is not JSON.
	_, err = ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "tinystories", Messages: msgs,
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, `no token of tinystories's vocabulary continues the JSON document: it needs "{"`) {
		t.Errorf("json_object: %v", err)
	}
	_, err = ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "tinystories", Messages: msgs, TopLogprobs: openai.Int(2)})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "top_logprobs" {
		t.Errorf("top_logprobs without logprobs: %v", err)
	}
}

func TestUnsupportedOllamaFieldsAreRefused(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	axDir(t, root, "npu", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}, Lanes: map[string]LaneConfig{LaneCPU: {Context: 128}, LaneAxcl: {}}})
	gen := `"model":"tinystories","prompt":"Once","stream":false`
	chat := `"model":"tinystories","stream":false,"messages":[{"role":"user","content":"Once"}]`
	threads := runtime.GOMAXPROCS(0)
	for _, tc := range []struct{ path, body, want string }{
		{"/api/generate", `{` + gen + `,"think":true}`, `"tinystories:latest" does not support thinking`}, // as Ollama answers (serve/reasoning.go)
		{"/api/chat", `{` + chat + `,"think":"high"}`, `"tinystories:latest" does not support thinking`},
		{"/api/chat", `{` + chat + `,"tools":[{"type":"function","function":{"name":"f"}}]}`, "tools: tinystories:latest has no chat template"},
		{"/api/generate", `{` + gen + `,"suffix":"end"}`, "suffix is not supported yet"},
		{"/api/generate", `{` + gen + `,"template":"{{ .Prompt }}"}`, "template is not supported yet"},
		{"/api/generate", `{` + gen + `,"context":[1,2,3]}`, "context is not supported yet"},
		{"/api/chat", `{` + chat + `,"top_logprobs":2}`, "top_logprobs needs logprobs: true"},
		{"/api/chat", `{` + chat + `,"logprobs":true,"top_logprobs":30}`, `field "top_logprobs" = 30 is out of range`},
		// Implemented on the cpu lane only: other lanes refuse them.
		{"/api/chat", `{"model":"npu","messages":[{"role":"user","content":"x"}],"options":{"frequency_penalty":0.5}}`, "options.frequency_penalty is not supported on the axcl lane"},
		{"/api/chat", `{"model":"npu","messages":[{"role":"user","content":"x"}],"options":{"presence_penalty":0.5}}`, "options.presence_penalty is not supported on the axcl lane"},
		{"/api/generate", `{"model":"npu","prompt":"x","logprobs":true}`, "logprobs is not supported on the axcl lane"},
		{"/api/generate", `{"model":"npu","prompt":"x","options":{"num_ctx":7}}`, "options.num_ctx = 7 cannot be applied: npu:latest runs on the axcl lane"},
		{"/api/chat", `{` + chat + `,"options":{"typical_p":0.7}}`, "options.typical_p is not supported yet"},
		{"/api/chat", `{` + chat + `,"options":{"mirostat":2}}`, "options.mirostat is not supported yet"},
		{"/api/generate", fmt.Sprintf(`{%s,"options":{"num_thread":%d}}`, gen, threads+1), fmt.Sprintf("options.num_thread = %d cannot be applied per request: the cpu lane runs every model with %d threads", threads+1, threads)},
		{"/api/chat", `{"model":"npu","messages":[{"role":"user","content":"x"}],"options":{"num_thread":2}}`, "options.num_thread cannot be applied: npu:latest runs on the axcl lane"},
		{"/api/generate", `{` + gen + `,"options":{"num_ctx":4096}}`, "options.num_ctx = 4096 exceeds the context tinystories:latest is loaded with (128 tokens): send at most 128"},
		{"/api/generate", `{` + gen + `,"options":{"num_ctx":2}}`, "options.num_ctx = 2: context window exceeded: the prompt is 4 tokens and the request limits the context to 2 tokens"},
	} {
		code, _, b := post(t, ts.URL+tc.path, tc.body)
		var e struct{ Error string }
		json.Unmarshal(b, &e)
		if code != 400 || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %s: %d %s\nwant %q", tc.path, tc.body, code, b, tc.want)
		}
	}
	// What can be honoured passes: the lane's own thread count, a context
	// within the loaded one, empty format, no tools, think false.
	for _, body := range []string{
		fmt.Sprintf(`{%s,"format":"","think":false,"options":{"num_thread":%d,"num_ctx":128,"num_predict":2,"frequency_penalty":0,"typical_p":1,"mirostat":0}}`, gen, threads),
		`{` + chat + `,"tools":[],"format":null,"options":{"num_ctx":64,"num_predict":2}}`,
	} {
		path := "/api/generate"
		if strings.Contains(body, "messages") {
			path = "/api/chat"
		}
		if code, _, b := post(t, ts.URL+path, body); code != 200 {
			t.Errorf("%s: %d %s", body, code, b)
		}
	}
}
