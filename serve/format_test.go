package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/upstream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// personSchema asks for a bounded document: every string and array has a
// limit, so a model that never closes a string still ends in time.
const personSchema = `{"type":"object","properties":{
	"name":{"type":"string","maxLength":40},
	"age":{"type":"integer"},
	"friends":{"type":"array","items":{"type":"string","minLength":1,"maxLength":12},"maxItems":3},
	"mood":{"enum":["happy","sad"]}},
	"required":["name","age","friends","mood"],"additionalProperties":false}`

// checkPerson fails unless doc validates against personSchema: decoded
// strictly into its fields, each checked against its keywords.
func checkPerson(t *testing.T, what, doc string) {
	t.Helper()
	var p struct {
		Name    *string   `json:"name"`
		Age     *float64  `json:"age"`
		Friends *[]string `json:"friends"`
		Mood    *string   `json:"mood"`
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	err := dec.Decode(&p)
	switch {
	case err != nil:
	case p.Name == nil || p.Age == nil || p.Friends == nil || p.Mood == nil:
		err = errors.New("a required property is missing")
	case utf8.RuneCountInString(*p.Name) > 40:
		err = errors.New("name longer than maxLength")
	case *p.Age != float64(int64(*p.Age)):
		err = errors.New("age is not an integer")
	case len(*p.Friends) > 3:
		err = errors.New("more friends than maxItems")
	case *p.Mood != "happy" && *p.Mood != "sad":
		err = errors.New("mood not in the enum")
	}
	for _, f := range derefOr(p.Friends) {
		if n := utf8.RuneCountInString(f); err == nil && (n < 1 || n > 12) {
			err = fmt.Errorf("friend %q outside minLength/maxLength", f)
		}
	}
	if err != nil {
		t.Errorf("%s: %q does not validate: %v", what, doc, err)
	}
}

func derefOr(p *[]string) []string {
	if p == nil {
		return nil
	}
	return *p
}

// jsonServer serves the tinystories model with JSON's brackets in its
// vocabulary (jsonTinyDir).
func jsonServer(t *testing.T) *testServer {
	root := t.TempDir()
	jsonTinyDir(t, root, "tinystories")
	return start(t, Options{ModelDirs: []string{root}})
}

// The tinystories model writes stories, never JSON: asked for a schema's
// document through OpenAI's response_format or Ollama's format, greedy or
// sampled, streamed or not, it returns one that validates and ends there
// (finish_reason "stop" before max_tokens).
func TestStructuredOutputOnTinyStories(t *testing.T) {
	ts := jsonServer(t)
	chat := func(extra string) (api struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
	}) {
		t.Helper()
		code, _, b := post(t, ts.URL+"/v1/chat/completions", `{"model":"tinystories","max_tokens":400,"messages":[{"role":"user","content":"Once upon a time"}],`+extra+`}`)
		if code != 200 || json.Unmarshal(b, &api) != nil || len(api.Choices) != 1 {
			t.Fatalf("%s: %d %s", extra, code, b)
		}
		return api
	}
	plain := chat(`"temperature":0`).Choices[0].Message.Content
	if json.Valid([]byte(plain)) {
		t.Fatalf("the model wrote JSON unasked: %q", plain)
	}
	schemaFormat := `"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":` + personSchema + `}}`
	greedy := chat(`"temperature":0,` + schemaFormat).Choices[0]
	if greedy.FinishReason != "stop" {
		t.Errorf("json_schema: finish_reason %q, want stop (the document is complete)", greedy.FinishReason)
	}
	checkPerson(t, "json_schema greedy", greedy.Message.Content)
	for seed := range 4 {
		c := chat(fmt.Sprintf(`"temperature":0.9,"seed":%d,%s`, seed, schemaFormat)).Choices[0]
		if c.FinishReason != "stop" {
			t.Errorf("seed %d: finish_reason %q", seed, c.FinishReason)
		}
		checkPerson(t, fmt.Sprintf("json_schema seed %d", seed), c.Message.Content)
	}

	// Streamed: the same text, in pieces, ending with stop.
	code, _, b := post(t, ts.URL+"/v1/chat/completions", `{"model":"tinystories","max_tokens":400,"temperature":0,"stream":true,"messages":[{"role":"user","content":"Once upon a time"}],`+schemaFormat+`}`)
	var streamed strings.Builder
	var finish string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
		}
		json.Unmarshal([]byte(data), &c)
		for _, ch := range c.Choices {
			streamed.WriteString(ch.Delta.Content)
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if code != 200 || streamed.String() != greedy.Message.Content || finish != "stop" {
		t.Errorf("stream: %d finish %q, %q; unstreamed %q", code, finish, streamed.String(), greedy.Message.Content)
	}

	// json_object: any JSON object.
	obj := chat(`"temperature":0,"response_format":{"type":"json_object"}`).Choices[0]
	var m map[string]any
	if err := json.Unmarshal([]byte(obj.Message.Content), &m); err != nil || obj.FinishReason != "stop" {
		t.Errorf("json_object: %q (%s): %v", obj.Message.Content, obj.FinishReason, err)
	}

	// Ollama's format: a schema on /api/chat (streamed and not), "json" on
	// /api/generate.
	for _, stream := range []bool{false, true} {
		code, _, b := post(t, ts.URL+"/api/chat", fmt.Sprintf(`{"model":"tinystories","stream":%v,"messages":[{"role":"user","content":"Once upon a time"}],"options":{"temperature":0,"num_predict":400},"format":%s}`, stream, personSchema))
		var text strings.Builder
		var last map[string]any
		for _, line := range ndjson(t, b) {
			msg, _ := line["message"].(map[string]any)
			s, _ := msg["content"].(string)
			text.WriteString(s)
			last = line
		}
		if code != 200 || last["done_reason"] != "stop" {
			t.Errorf("/api/chat stream %v: %d %s", stream, code, b)
		}
		checkPerson(t, fmt.Sprintf("/api/chat format stream %v", stream), text.String())
	}
	code, _, b = post(t, ts.URL+"/api/generate", `{"model":"tinystories","stream":false,"prompt":"Once upon a time","options":{"temperature":0,"num_predict":400},"format":"json"}`)
	var genResp struct {
		Response   string `json:"response"`
		DoneReason string `json:"done_reason"`
	}
	json.Unmarshal(b, &genResp)
	if err := json.Unmarshal([]byte(genResp.Response), &m); code != 200 || err != nil || genResp.DoneReason != "stop" {
		t.Errorf("/api/generate format json: %d %s: %v", code, b, err)
	}
}

// The official OpenAI client sends response_format json_schema and reads
// the document back; a schema the grammar refuses is an *openai.Error on
// param response_format naming the keyword.
func TestStructuredOutputThroughOpenAIClient(t *testing.T) {
	ts := jsonServer(t)
	var schema map[string]any
	if err := json.Unmarshal([]byte(personSchema), &schema); err != nil {
		t.Fatal(err)
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}
	format := func(schema any) openai.ChatCompletionNewParamsResponseFormatUnion {
		return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: schema, Strict: openai.Bool(true)}}}
	}
	resp, err := ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "tinystories", Messages: msgs,
		MaxTokens: openai.Int(400), Temperature: openai.Float(0), ResponseFormat: format(schema)})
	if err != nil || len(resp.Choices) != 1 {
		t.Fatalf("json_schema: %v %+v", err, resp)
	}
	if resp.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason %q", resp.Choices[0].FinishReason)
	}
	checkPerson(t, "openai client", resp.Choices[0].Message.Content)

	resp, err = ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "tinystories", Messages: msgs, MaxTokens: openai.Int(400),
		Temperature: openai.Float(0), ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}})
	var m map[string]any
	if err != nil || json.Unmarshal([]byte(resp.Choices[0].Message.Content), &m) != nil {
		t.Errorf("json_object: %v %+v", err, resp)
	}

	_, err = ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "tinystories", Messages: msgs,
		ResponseFormat: format(map[string]any{"type": "object", "properties": map[string]any{"zip": map[string]any{"type": "string", "pattern": "^[0-9]{5}$"}}})})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "response_format" ||
		!strings.Contains(apiErr.Message, `"pattern"`) || !strings.Contains(apiErr.Message, "/properties/zip") {
		t.Errorf("pattern: %v", err)
	}
}

// A schema the grammar cannot run, or a format that is not one, is a 400
// naming the field and the keyword; lanes that cannot constrain output
// refuse the field (the table in lanefields.go).
func TestStructuredOutputRefusals(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	axDir(t, root, "npu", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	chat := `"model":"tinystories","max_tokens":2,"messages":[{"role":"user","content":"Once"}]`
	for _, tc := range []struct{ extra, want string }{
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"integer","minimum":0}}}`, `schema keyword "minimum" at the root`},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"$ref":"http://x/s.json"}}}}}`, `schema keyword "$ref" at /properties/a`},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"anyOf":[{"type":"object"},{"type":"object","properties":{"b":{}}}]}}}`, `schema keyword "anyOf"`},
		{`"response_format":{"type":"json_schema"}`, `type json_schema needs "json_schema"`},
		{`"response_format":{"type":"xml"}`, `type "xml" is not one of text, json_object, json_schema`},
		{`"response_format":"json"`, `want {"type":"text"}`},
	} {
		code, _, b := post(t, ts.URL+"/v1/chat/completions", `{`+chat+`,`+tc.extra+`}`)
		var env struct {
			Error struct{ Message, Param string }
		}
		json.Unmarshal(b, &env)
		if code != 400 || env.Error.Param != "response_format" || !strings.HasPrefix(env.Error.Message, "response_format") || !strings.Contains(env.Error.Message, tc.want) {
			t.Errorf("%s: %d %s\nwant %q", tc.extra, code, b, tc.want)
		}
	}
	ochat := `"model":"tinystories","stream":false,"messages":[{"role":"user","content":"Once"}]`
	for _, tc := range []struct{ path, body, want string }{
		{"/api/chat", `{` + ochat + `,"format":{"type":"string","format":"email"}}`, `format: schema keyword "format" at the root: string formats are not enforced`},
		{"/api/chat", `{` + ochat + `,"format":"xml"}`, `format "xml": want "json" or a JSON schema object`},
		{"/api/generate", `{"model":"tinystories","prompt":"x","format":[1]}`, `format: want "json" or a JSON schema object`},
		{"/api/chat", `{"model":"npu","messages":[{"role":"user","content":"x"}],"format":"json"}`, "format is not supported on the axcl lane"},
		{"/api/generate", `{"model":"npu","prompt":"x","format":{"type":"object"}}`, "format is not supported on the axcl lane"},
	} {
		code, _, b := post(t, ts.URL+tc.path, tc.body)
		var e struct{ Error string }
		json.Unmarshal(b, &e)
		if code != 400 || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %s: %d %s\nwant %q", tc.path, tc.body, code, b, tc.want)
		}
	}
	code, _, b := post(t, ts.URL+"/v1/chat/completions", `{"model":"npu","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`)
	if code != 400 || !strings.Contains(string(b), `"param":"response_format"`) || !strings.Contains(string(b), "response_format is not supported on the axcl lane") {
		t.Errorf("axcl response_format: %d %s", code, b)
	}
}

// HTTP upstreams are forwarded response_format as the client sent it (an
// Ollama format as the response_format meaning the same), schema and all:
// the upstream decides what it supports. A single_message upstream
// (main_api_*) would ignore it: 400.
func TestStructuredOutputForwardedToUpstreams(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]json.RawMessage
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		var b map[string]json.RawMessage
		json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", `{"choices":[{"index":0,"delta":{"content":"{}"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	ups := []upstream.Config{{Name: "remote", URL: up.URL}, {Name: "vendor", URL: up.URL, SingleMessage: true}}
	ts := start(t, Options{Upstreams: ups, Engines: map[string]engine.Engine{
		LaneCPU: cpu.New(), "upstream": upstream.New(ups, upstream.Options{StartTimeout: 5 * time.Second})}})
	last := func() map[string]json.RawMessage {
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) == 0 {
			return nil
		}
		return bodies[len(bodies)-1]
	}
	same := func(a, b string) bool {
		var x, y any
		return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
	}
	// A pattern edgectl's grammar refuses goes to the upstream untouched.
	rf := `{"type":"json_schema","json_schema":{"name":"z","strict":true,"schema":{"type":"string","pattern":"^[0-9]+$"}}}`
	code, _, b := post(t, ts.URL+"/v1/chat/completions", `{"model":"remote","messages":[{"role":"user","content":"x"}],"response_format":`+rf+`}`)
	if code != 200 || !same(string(last()["response_format"]), rf) {
		t.Errorf("openai: %d %s; upstream got %s", code, b, last()["response_format"])
	}
	for _, tc := range []struct{ format, want string }{
		{`"json"`, `{"type":"json_object"}`},
		{`{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"type":"json_schema","json_schema":{"name":"format","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}`},
	} {
		code, _, b := post(t, ts.URL+"/api/chat", `{"model":"remote","stream":false,"messages":[{"role":"user","content":"x"}],"format":`+tc.format+`}`)
		if code != 200 || !same(string(last()["response_format"]), tc.want) {
			t.Errorf("ollama format %s: %d %s; upstream got %s", tc.format, code, b, last()["response_format"])
		}
	}
	n := len(bodies)
	code, _, b = post(t, ts.URL+"/v1/chat/completions", `{"model":"vendor","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`)
	if code != 400 || !strings.Contains(string(b), "single_message") || len(bodies) != n {
		t.Errorf("single_message upstream: %d %s (%d requests sent)", code, b, len(bodies)-n)
	}
}
