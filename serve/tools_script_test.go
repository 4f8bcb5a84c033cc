package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/upstream"
)

// scriptEngine stands in for the cpu lane's engine with a model that
// calls tools as a trained one does: it claims directories holding an
// answer.txt, answers every request with that text in small pieces (as
// tokens come), and reports a real chat template, so serve parses the
// answer in the template's format. It records the last request.
type scriptEngine struct {
	template string
	mu       sync.Mutex
	last     engine.Request
}

func (e *scriptEngine) Name() string { return "cpu" }

func (e *scriptEngine) Probe(path string) (engine.Found, bool) {
	if _, err := os.Stat(filepath.Join(path, "answer.txt")); err != nil {
		return engine.Found{}, false
	}
	return engine.Found{Format: "script", Size: 1 << 20}, true
}

func (e *scriptEngine) Load(_ context.Context, path string, _ engine.LoadOptions) (engine.Model, error) {
	b, err := os.ReadFile(filepath.Join(path, "answer.txt"))
	if err != nil {
		return nil, engine.ErrUnsupported
	}
	return &scriptModel{e: e, answer: string(b), name: filepath.Base(path)}, nil
}

type scriptModel struct {
	e            *scriptEngine
	answer, name string
}

func (m *scriptModel) Info() engine.ModelInfo {
	return engine.ModelInfo{Name: m.name, Format: "script", ChatTemplate: m.e.template, ContextLength: 4096, SizeBytes: 1 << 20}
}
func (m *scriptModel) NewSession() (engine.Session, error) { return m, nil }
func (m *scriptModel) Close() error                        { return nil }
func (m *scriptModel) Reset() error                        { return nil }

func (m *scriptModel) Generate(_ context.Context, req engine.Request, emit func(engine.Token) error) (engine.Result, error) {
	m.e.mu.Lock()
	m.e.last = req
	m.e.mu.Unlock()
	n := 0
	for s := m.answer; s != ""; n++ { // pieces of up to 3 runes
		cut := 0
		for i := 0; i < 3 && cut < len(s); i++ {
			_, size := utf8.DecodeRuneInString(s[cut:])
			cut += size
		}
		if err := emit(engine.Token{ID: n, Text: s[:cut]}); err != nil {
			return engine.Result{}, err
		}
		s = s[cut:]
	}
	return engine.Result{FinishReason: engine.FinishStop, PromptTokens: 10, CompletionTokens: n}, nil
}

// qwenAnswer is how Qwen2.5 answers a question that needs two tools:
// a sentence, then two <tool_call> blocks.
const qwenAnswer = "I'll look up both for you.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"celsius\", \"days\": [1, 2]}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"Europe/Zürich\"}}\n</tool_call>"

func scriptServer(t *testing.T, answer string) (*testServer, *scriptEngine) {
	src, err := os.ReadFile(filepath.Join("../format/chattemplate/testdata/templates", toolTemplates["qwen"]))
	if err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "qwen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "answer.txt"), []byte(answer), 0o644); err != nil {
		t.Fatal(err)
	}
	eng := &scriptEngine{template: string(src)}
	return start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: eng}}), eng
}

// With tool_choice auto (the default), what the model writes decides: a
// Qwen answer of a sentence and two <tool_call> blocks is the sentence as
// content and two calls, finish_reason "tool_calls", unstreamed and
// streamed (content first, then each call's deltas), on OpenAI's route
// and Ollama's; parallel_tool_calls false keeps the first call; the
// request the engine gets carries the tools and the conversation's calls
// with their arguments as objects.
func TestAutoToolCallsParsedFromAnswer(t *testing.T) {
	ts, eng := scriptServer(t, qwenAnswer)
	wantCalls := []struct{ name, args string }{
		{"get_weather", `{"city": "Zürich", "unit": "celsius", "days": [1, 2]}`},
		{"get_time", `{"zone": "Europe/Zürich"}`},
	}
	body := `{"model":"qwen","messages":[{"role":"user","content":"Weather and time in Zürich?"}],"tools":` + weatherTools
	type answer struct {
		Choices []struct {
			Message struct {
				Content   string
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	ask := func(extra string) (answer, []byte) {
		t.Helper()
		var a answer
		code, _, b := post(t, ts.URL+"/v1/chat/completions", body+extra+`}`)
		if code != 200 || json.Unmarshal(b, &a) != nil || len(a.Choices) != 1 {
			t.Fatalf("%s: %d %s", extra, code, b)
		}
		return a, b
	}
	resp, b := ask("")
	ch := resp.Choices[0]
	if ch.Message.Content != "I'll look up both for you." || ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 2 {
		t.Fatalf("%s", b)
	}
	for i, w := range wantCalls {
		c := ch.Message.ToolCalls[i]
		if c.Function.Name != w.name || c.Function.Arguments != w.args || !strings.HasPrefix(c.ID, "call_") {
			t.Errorf("call %d: %+v, want %s(%s)", i, c, w.name, w.args)
		}
	}
	eng.mu.Lock()
	if got := eng.last.Tools; got == nil || got.Choice != engine.ToolAuto || string(got.Defs) != weatherTools {
		t.Errorf("the engine got tools %+v", got)
	}
	eng.mu.Unlock()

	code, _, b := post(t, ts.URL+"/v1/chat/completions", body+`,"stream":true}`)
	s := readSSE(t, b)
	if code != 200 || s.content != "I'll look up both for you." || s.finish != "tool_calls" || len(s.calls) != 2 {
		t.Fatalf("stream: %+v\n%s", s, b)
	}
	for i, w := range wantCalls {
		if s.calls[i].name != w.name || s.calls[i].args != w.args {
			t.Errorf("streamed call %d: %+v", i, s.calls[i])
		}
	}
	if i, j := strings.Index(string(b), `"content":"I'`), strings.Index(string(b), `"tool_calls"`); i < 0 || j < i {
		t.Errorf("content does not come before the calls:\n%s", b)
	}

	if resp, b := ask(`,"parallel_tool_calls":false`); len(resp.Choices[0].Message.ToolCalls) != 1 || resp.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" ||
		resp.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("parallel_tool_calls false: %s", b)
	}

	// tool_choice none: nothing is parsed, the text is the answer.
	if resp, b := ask(`,"tool_choice":"none"`); resp.Choices[0].Message.Content != qwenAnswer || resp.Choices[0].FinishReason != "stop" || len(resp.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("tool_choice none: %s", b)
	}
	eng.mu.Lock()
	if eng.last.Tools.Offered() {
		t.Errorf("tool_choice none: the engine was offered tools %+v", eng.last.Tools)
	}
	eng.mu.Unlock()

	for _, stream := range []bool{false, true} {
		code, _, b := post(t, ts.URL+"/api/chat", fmt.Sprintf(`{"model":"qwen","stream":%v,"messages":[{"role":"user","content":"Weather and time?"},
			{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_time","arguments":{"zone":"UTC"}}}]},
			{"role":"tool","tool_name":"get_time","content":"12:00"}],"tools":%s}`, stream, weatherTools))
		var text string
		var calls []map[string]any
		for _, line := range ndjson(t, b) {
			msg, _ := line["message"].(map[string]any)
			s, _ := msg["content"].(string)
			text += s
			cs, _ := msg["tool_calls"].([]any)
			for _, c := range cs {
				calls = append(calls, c.(map[string]any)["function"].(map[string]any))
			}
		}
		if code != 200 || text != "I'll look up both for you." || len(calls) != 2 {
			t.Fatalf("/api/chat stream %v: %d %s", stream, code, b)
		}
		for i, w := range wantCalls {
			args, _ := json.Marshal(calls[i]["arguments"])
			if calls[i]["name"] != w.name || calls[i]["index"] != float64(i) || !sameJSONText(string(args), w.args) {
				t.Errorf("/api/chat stream %v call %d: %v", stream, i, calls[i])
			}
		}
		eng.mu.Lock()
		msgs := eng.last.Messages
		eng.mu.Unlock()
		if len(msgs) != 3 || len(msgs[1].ToolCalls) != 1 || string(msgs[1].ToolCalls[0].Function.Arguments) != `{"zone":"UTC"}` || msgs[2].Name != "get_time" {
			t.Errorf("the engine got the history %+v", msgs)
		}
	}
}

func sameJSONText(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// HTTP upstreams do tool calling themselves: they are sent tools,
// tool_choice, parallel_tool_calls and the conversation's calls (OpenAI's
// shape: arguments as text, tool_call_id) as the client sent them, and
// their streamed tool_call deltas come back as OpenAI tool_calls and
// Ollama message.tool_calls; a single_message upstream (main_api_*) would
// ignore tools: 400.
func TestToolsForwardedToUpstreams(t *testing.T) {
	var mu sync.Mutex
	var last map[string]json.RawMessage
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		var b map[string]json.RawMessage
		json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		last = b
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{ // as llama.cpp's server streams a call
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_up1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Oslo\", "}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"unit\": \"celsius\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	ups := []upstream.Config{{Name: "remote", URL: up.URL}, {Name: "vendor", URL: up.URL, SingleMessage: true}}
	ts := start(t, Options{Upstreams: ups, Engines: map[string]engine.Engine{"upstream": upstream.New(ups, upstream.Options{StartTimeout: 5 * time.Second})}})
	history := `[{"role":"user","content":"Weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"22"},{"role":"user","content":"And Oslo?"}]`
	choice := `{"type":"function","function":{"name":"get_weather"}}`
	code, _, b := post(t, ts.URL+"/v1/chat/completions", `{"model":"remote","messages":`+history+`,"tools":`+weatherTools+`,"tool_choice":`+choice+`,"parallel_tool_calls":false}`)
	var resp struct {
		Choices []struct {
			Message struct {
				Content   *string
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if code != 200 || json.Unmarshal(b, &resp) != nil || resp.Choices[0].FinishReason != "tool_calls" || len(resp.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("%d %s", code, b)
	}
	if c := resp.Choices[0].Message.ToolCalls[0]; c.ID != "call_up1" || c.Function.Name != "get_weather" || c.Function.Arguments != `{"city": "Oslo", "unit": "celsius"}` {
		t.Errorf("call %+v", c)
	}
	mu.Lock()
	sent := last
	mu.Unlock()
	var msgs []struct {
		Role       string
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
	}
	json.Unmarshal(sent["messages"], &msgs)
	if !sameJSONText(string(sent["tools"]), weatherTools) || !sameJSONText(string(sent["tool_choice"]), choice) || string(sent["parallel_tool_calls"]) != "false" ||
		len(msgs) != 4 || len(msgs[1].ToolCalls) != 1 || msgs[1].ToolCalls[0].ID != "call_a" || !sameJSONText(msgs[1].ToolCalls[0].Function.Arguments, `{"city":"Paris","unit":"celsius"}`) ||
		msgs[2].ToolCallID != "call_a" {
		t.Errorf("the upstream was sent %s", func() string { b, _ := json.Marshal(sent); return string(b) }())
	}

	code, _, b = post(t, ts.URL+"/api/chat", `{"model":"remote","stream":false,"messages":[{"role":"user","content":"Oslo?"}],"tools":`+weatherTools+`}`)
	var ol struct {
		Message struct {
			ToolCalls []struct {
				Function struct {
					Name      string
					Arguments map[string]any
				}
			} `json:"tool_calls"`
		}
	}
	if code != 200 || json.Unmarshal(b, &ol) != nil || len(ol.Message.ToolCalls) != 1 || ol.Message.ToolCalls[0].Function.Arguments["city"] != "Oslo" {
		t.Errorf("/api/chat: %d %s", code, b)
	}

	code, _, b = post(t, ts.URL+"/v1/chat/completions", `{"model":"vendor","messages":[{"role":"user","content":"x"}],"tools":`+weatherTools+`}`)
	if code != 400 || !strings.Contains(string(b), "single_message") {
		t.Errorf("single_message upstream: %d %s", code, b)
	}
}
