package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
)

func sse(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
}

func load(t *testing.T, cfg Config) engine.Model {
	t.Helper()
	e := New([]Config{cfg}, Options{StartTimeout: 5 * time.Second, StopTimeout: 2 * time.Second})
	m, err := e.Load(context.Background(), Path(cfg.Name), engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func run(t *testing.T, ctx context.Context, m engine.Model, req engine.Request) (string, engine.Result, error) {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		return "", engine.Result{}, err
	}
	var b strings.Builder
	res, err := s.Generate(ctx, req, func(tok engine.Token) error { b.WriteString(tok.Text); return nil })
	return b.String(), res, err
}

// llama-server: /health answers 503 while loading, timings in the stream.
func TestLlamaServerStyle(t *testing.T) {
	var healthCalls atomic.Int32
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			if healthCalls.Add(1) < 3 {
				w.WriteHeader(503)
				io.WriteString(w, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`)
				return
			}
			io.WriteString(w, `{"status":"ok"}`)
		case "/v1/chat/completions":
			json.NewDecoder(r.Body).Decode(&got)
			sse(w,
				`{"id":"a","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`,
				`{"id":"a","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`,
				`{"id":"a","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}`,
				`{"id":"a","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
				`{"id":"a","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9},"timings":{"cache_n":3,"prompt_n":4,"prompt_ms":40,"predicted_n":2,"predicted_ms":20}}`,
				`[DONE]`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	m := load(t, Config{Name: "llama", URL: srv.URL + "/v1", Model: "stories"})
	temp := 0.0
	text, res, err := run(t, context.Background(), m, engine.Request{
		Messages:  []engine.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "hi"}},
		MaxTokens: 2, Stop: []string{"END"}, Sampling: engine.Sampling{Temperature: &temp, TopK: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if text != "Hello" || res.FinishReason != "length" || res.PromptTokens != 7 || res.CompletionTokens != 2 ||
		res.PrefillDuration != 40*time.Millisecond || res.DecodeDuration != 20*time.Millisecond {
		t.Errorf("%q %+v", text, res)
	}
	if healthCalls.Load() < 3 {
		t.Errorf("Load did not wait for /health to turn 200")
	}
	msgs, _ := got["messages"].([]any)
	if got["model"] != "stories" || got["stream"] != true || len(msgs) != 2 || got["max_tokens"] != 2.0 ||
		got["temperature"] != 0.0 || got["top_k"] != 5.0 || got["stop"].([]any)[0] != "END" {
		t.Errorf("request body %v", got)
	}
	if so, _ := got["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("include_usage not requested: %v", got)
	}
}

// FastFlowLM: errors with HTTP 200, "cancel" finish reasons, usage in seconds.
func TestFastFlowLMQuirks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			http.NotFound(w, r) // FLM has none: Load falls back to /v1/models
		case "/v1/models":
			io.WriteString(w, `{"object":"list","data":[]}`)
		case "/v1/chat/completions":
			b, _ := io.ReadAll(r.Body)
			switch {
			case strings.Contains(string(b), "too long"):
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"error":{"message":"Max length reached","type":"server_error","code":500}}`)
			case strings.Contains(string(b), "plain"):
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"error":"NPU is in use and request queue is full (limit: 10)","code":503}`)
			case strings.Contains(string(b), "midway"):
				sse(w, `{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`,
					`{"error":{"message":"decoder failed","type":"server_error"}}`)
			case strings.Contains(string(b), "bad finish"):
				sse(w, `{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"error"}]}`, `[DONE]`)
			default:
				sse(w, `{"id":"fastflowlm-chat-completion","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}`,
					`{"id":"fastflowlm-chat-completion","choices":[{"index":0,"delta":{"content":null},"finish_reason":"cancel"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6,"load_duration":0.1,"prefill_duration_ttft":0.25,"decoding_duration":0.5,"prefill_speed_tps":20,"decoding_speed_tps":2}}`,
					`[DONE]`)
			}
		}
	}))
	defer srv.Close()
	m := load(t, Config{Name: "flm", URL: srv.URL})
	text, res, err := run(t, context.Background(), m, engine.Request{Prompt: "hi"})
	if err != nil || text != "ok" || res.FinishReason != "stop" || res.PrefillDuration != 250*time.Millisecond ||
		res.DecodeDuration != 500*time.Millisecond || res.Extra["upstream_tps"] != 2.0 || res.PromptTokens != 5 {
		t.Errorf("%q %+v %v", text, res, err)
	}
	for prompt, want := range map[string]struct {
		status int
		msg    string
	}{
		"too long":   {500, "Max length reached"},
		"plain":      {502, "NPU is in use"},
		"midway":     {502, "decoder failed"},
		"bad finish": {502, `finish_reason "error"`},
	} {
		_, _, err := run(t, context.Background(), m, engine.Request{Prompt: prompt})
		var ue *Error
		if !errors.As(err, &ue) || ue.Status != want.status || !strings.Contains(ue.Message, want.msg) {
			t.Errorf("%s: %v", prompt, err)
		}
	}
	if m.(*Model).Alive() != nil {
		t.Error("an upstream that reported errors was marked broken")
	}
}

// main_api_*: messages must be one object, model a string.
func TestSingleMessageUpstream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		var body struct {
			Model    *string         `json:"model"`
			Messages json.RawMessage `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		if body.Model == nil {
			w.WriteHeader(500)
			io.WriteString(w, `type must be string, but is null`)
			return
		}
		var one struct{ Role, Content string }
		if json.Unmarshal(body.Messages, &one) != nil {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"Invalid request format"}`)
			return
		}
		sse(w, fmt.Sprintf(`{"choices":[{"delta":{"content":%q},"finish_reason":"stop"}]}`, one.Content), `[DONE]`)
	}))
	defer srv.Close()
	m := load(t, Config{Name: "qwen3", URL: srv.URL, SingleMessage: true, Model: "AXERA-TECH/Qwen3-1.7B"})
	text, _, err := run(t, context.Background(), m, engine.Request{Messages: []engine.Message{{Role: "user", Content: "hello"}}})
	if err != nil || text != "hello" {
		t.Errorf("%q %v", text, err)
	}
	arr := load(t, Config{Name: "qwen3", URL: srv.URL})
	_, _, err = run(t, context.Background(), arr, engine.Request{Prompt: "x"})
	var ue *Error
	if !errors.As(err, &ue) || ue.Status != 400 || ue.Message != "Invalid request format" {
		t.Errorf("array against main_api: %v", err)
	}
}

func TestCancelClosesTheUpstreamRequest(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"t%d \"}}]}\n\n", i); err != nil {
				break
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				close(gone)
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	m := load(t, Config{Name: "slow", URL: srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	s, _ := m.NewSession()
	n := 0
	_, err := s.Generate(ctx, engine.Request{Prompt: "x"}, func(engine.Token) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream never saw the request end")
	}
}

// TestHelperUpstream is the child-process upstream: the test binary run
// with GO_UPSTREAM_HELPER=1 serves a tiny OpenAI API on the given port.
func TestHelperUpstream(t *testing.T) {
	if os.Getenv("GO_UPSTREAM_HELPER") != "1" {
		t.Skip("helper process")
	}
	port := os.Args[len(os.Args)-1]
	time.Sleep(200 * time.Millisecond) // a slow start
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "CRASH") {
			os.Exit(3)
		}
		sse(w, `{"choices":[{"delta":{"content":"child says hi"},"finish_reason":"stop"}]}`, `[DONE]`)
	})
	http.ListenAndServe("127.0.0.1:"+port, mux)
	os.Exit(0)
}

func TestChildProcessUpstream(t *testing.T) {
	cfg := Config{Name: "child", Command: []string{os.Args[0], "-test.run=^TestHelperUpstream$", "--", "{port}"},
		Env: []string{"GO_UPSTREAM_HELPER=1"}}
	m := load(t, cfg)
	first := strings.TrimPrefix(m.(*Model).BaseURL(), "http://")
	text, _, err := run(t, context.Background(), m, engine.Request{Prompt: "hi"})
	if err != nil || text != "child says hi" {
		t.Fatalf("%q %v", text, err)
	}
	if _, _, err := run(t, context.Background(), m, engine.Request{Prompt: "CRASH"}); err == nil {
		t.Fatal("crash not reported")
	}
	deadline := time.Now().Add(3 * time.Second)
	for m.(*Model).Alive() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if m.(*Model).Alive() == nil {
		t.Error("crashed child still considered alive")
	}
	m.Close()
	if c, err := net.DialTimeout("tcp", first, time.Second); err == nil {
		c.Close()
		t.Errorf("crashed child's port %s still answers after Close", first)
	}

	// A fresh load starts a new child; Close stops it and frees its port.
	m2 := load(t, cfg)
	addr := strings.TrimPrefix(m2.(*Model).BaseURL(), "http://")
	m2.Close()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("child still listening on %s after Close", addr)
	}
}

func TestUnknownUpstream(t *testing.T) {
	e := New(nil, Options{})
	if _, err := e.Load(context.Background(), "/models/x.gguf", engine.LoadOptions{}); !errors.Is(err, engine.ErrUnsupported) {
		t.Errorf("%v", err)
	}
}

func TestDownUpstreamFailsFast(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	e := New([]Config{{Name: "down", URL: "http://" + addr}}, Options{StartTimeout: 300 * time.Millisecond})
	_, err := e.Load(context.Background(), Path("down"), engine.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "not healthy after 300ms") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("%v", err)
	}
}

// PenaltiesOff (Ollama's repeat_last_n 0) is sent as repeat_penalty 1, the
// upstream's "no penalty", instead of leaving the field out and getting the
// upstream's default.
func TestPenaltiesOffSentAsRepeatPenaltyOne(t *testing.T) {
	bodies := make(chan map[string]any, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		var got map[string]any
		json.NewDecoder(r.Body).Decode(&got)
		bodies <- got
		sse(w, `{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}`, `[DONE]`)
	}))
	defer srv.Close()
	m := load(t, Config{Name: "llama", URL: srv.URL})
	for _, tc := range []struct {
		sm   engine.Sampling
		want any
	}{
		{engine.Sampling{RepeatPenalty: 1.3}, 1.3},
		{engine.Sampling{RepeatPenalty: 1.3, PenaltiesOff: true}, 1.0},
	} {
		if _, _, err := run(t, context.Background(), m, engine.Request{Prompt: "hi", Sampling: tc.sm}); err != nil {
			t.Fatal(err)
		}
		if got := <-bodies; got["repeat_penalty"] != tc.want {
			t.Errorf("%+v: sent repeat_penalty %v, want %v", tc.sm, got["repeat_penalty"], tc.want)
		}
	}
}

// single_message: the system prompt and earlier turns are folded into the
// one message the server reads; over context_length the oldest turns go
// first, with a warning in the result and the log, never the system prompt
// or the question.
func TestSingleMessageFoldsAndTruncates(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		var body struct {
			Messages struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Messages.Role != "user" {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"Invalid request format"}`)
			return
		}
		sse(w, fmt.Sprintf(`{"choices":[{"delta":{"content":%q},"finish_reason":"stop"}]}`, body.Messages.Content), `[DONE]`)
	}))
	defer srv.Close()
	var logged []string
	e := New([]Config{{Name: "api", URL: srv.URL, SingleMessage: true, ContextLength: 100}},
		Options{StartTimeout: 5 * time.Second, Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	m, err := e.Load(context.Background(), Path("api"), engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	long := strings.Repeat("x", 150) // 50 estimated tokens
	msgs := []engine.Message{{Role: "system", Content: "be brief"},
		{Role: "user", Content: "q1 " + long}, {Role: "assistant", Content: "a1"},
		{Role: "user", Content: "q2"}, {Role: "assistant", Content: "a2"}, {Role: "user", Content: "q3"}}

	// Short enough: everything, in order, system first.
	short := append([]engine.Message{}, msgs...)
	short[1].Content = "q1"
	text, res, err := run(t, context.Background(), m, engine.Request{Messages: short, MaxTokens: 10})
	if want := "system: be brief\nuser: q1\nassistant: a1\nuser: q2\nassistant: a2\nuser: q3"; err != nil || text != want {
		t.Fatalf("folded %q (%v), want %q", text, err, want)
	}
	if res.Extra["warning"] != nil {
		t.Errorf("warning without truncation: %v", res.Extra)
	}

	// Over the 100-token context: turn 1 (q1 and its answer) is dropped.
	text, res, err = run(t, context.Background(), m, engine.Request{Messages: msgs, MaxTokens: 10})
	if want := "system: be brief\nuser: q2\nassistant: a2\nuser: q3"; err != nil || text != want {
		t.Errorf("truncated %q (%v), want %q", text, err, want)
	}
	if res.Extra["context_truncated_turns"] != 1 || !strings.Contains(fmt.Sprint(res.Extra["warning"]), "dropped the 1 oldest turn") {
		t.Errorf("extra %v", res.Extra)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "warning: conversation too long for the 100-token context") {
		t.Errorf("log %q", logged)
	}
}
