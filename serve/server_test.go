package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/edgectl/edgectl/engine/upstream"
)

// A FastFlowLM-like upstream behind serve: its 200-with-error replies and
// "cancel" finish reasons come out as standard OpenAI answers and errors.
func TestUpstreamLaneNormalizesQuirks(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			io.WriteString(w, "ok")
		case "/v1/chat/completions":
			b, _ := io.ReadAll(r.Body)
			if strings.Contains(string(b), "too long") {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"error":{"message":"Max length reached","type":"server_error","code":400}}`)
				return
			}
			if strings.Contains(string(b), "explode") {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"error":{"message":"NPU fault","type":"server_error","code":500}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range []string{
				`{"id":"fastflowlm-chat-completion","choices":[{"index":0,"delta":{"content":"Hi "},"finish_reason":null}]}`,
				`{"id":"fastflowlm-chat-completion","choices":[{"index":0,"delta":{"content":"there"},"finish_reason":null}]}`,
				`{"id":"fastflowlm-chat-completion","choices":[{"index":0,"delta":{"content":null},"finish_reason":"cancel"}],"usage":{"prompt_tokens":6,"completion_tokens":2,"prefill_duration_ttft":0.2,"decoding_duration":0.4,"decoding_speed_tps":5}}`,
				`[DONE]`} {
				fmt.Fprintf(w, "data: %s\n\n", c)
			}
		}
	}))
	defer up.Close()
	ts := start(t, Options{Upstreams: []upstream.Config{{Name: "flm-llama", URL: up.URL, Model: "llama3.2:1b"}}})

	resp, err := ts.chat().New(context.Background(), openai.ChatCompletionNewParams{
		Model: "flm-llama", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "Hi there" || resp.Choices[0].FinishReason != "stop" ||
		resp.Usage.PromptTokens != 6 || resp.Usage.CompletionTokens != 2 {
		t.Errorf("%s", resp.RawJSON())
	}
	var m struct {
		TPS        float64 `json:"tps"`
		PrefillTPS float64 `json:"prefill_tps"`
		Lane       string  `json:"lane"`
	}
	json.Unmarshal([]byte(resp.Usage.JSON.ExtraFields["metrics"].Raw()), &m)
	if m.TPS != 2.5 || m.PrefillTPS != 30 || m.Lane != "upstream:flm-llama" { // (2-1)/0.4 s, 6/0.2 s
		t.Errorf("metrics %+v", m)
	}
	var apiErr *openai.Error
	_, err = ts.chat().New(context.Background(), openai.ChatCompletionNewParams{
		Model: "flm-llama", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("too long")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "Max length reached") {
		t.Errorf("upstream 400-in-200: %v", err)
	}
	_, err = ts.chat().New(context.Background(), openai.ChatCompletionNewParams{
		Model: "flm-llama", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("explode")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Type != "api_error" {
		t.Errorf("upstream 500-in-200: %v", err)
	}
}

func TestAPIKeyProtectsEverythingButHealth(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "m", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}, APIKey: "s3cret"})
	if code, _ := get(t, ts.URL+"/health"); code != 200 {
		t.Errorf("/health %d", code)
	}
	// "/" is open too: serve/chatpage_test.go.
	for _, p := range []string{"/api/tags", "/api/ps", "/api/version", "/v1/models", "/metrics"} {
		if code, _ := get(t, ts.URL+p); code != 401 {
			t.Errorf("%s without key: %d", p, code)
		}
		if code, _ := get(t, ts.URL+p, "Authorization", "Bearer wrong"); code != 401 {
			t.Errorf("%s wrong key: %d", p, code)
		}
		if code, _ := get(t, ts.URL+p, "Authorization", "Bearer s3cret"); code != 200 {
			t.Errorf("%s with key: %d", p, code)
		}
	}
	code, _, b := post(t, ts.URL+"/api/chat", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if code != 401 || !strings.Contains(string(b), `"error"`) {
		t.Errorf("/api/chat: %d %s", code, b)
	}
	_, err := ts.chat().New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Type != "authentication_error" {
		t.Errorf("openai without key: %v", err)
	}
	cl := ts.client(option.WithAPIKey("s3cret"))
	resp, err := cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	if err != nil || resp.Choices[0].Message.Content != "You said: x (turn 1). ☕" {
		t.Errorf("with key: %v", err)
	}
}

func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:11434": true, "localhost:8080": true, "[::1]:80": true,
		"0.0.0.0:11434": false, ":11434": false, "192.168.1.5:80": false, "[::]:80": false,
	} {
		err := CheckAddr(addr, "")
		if (err == nil) != ok {
			t.Errorf("%s: %v", addr, err)
		}
		if err := CheckAddr(addr, "key"); err != nil {
			t.Errorf("%s with key: %v", addr, err)
		}
	}
	if err := CheckAddr("nonsense", ""); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Errorf("bad addr: %v", err)
	}
}

func TestMetricsExposition(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "m", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	chat(t, ts, "m", "hello")
	for series, want := range map[string]string{
		`edgectl_requests_total{route="/api/chat",model="m:latest",code="200"}`: "1",
		`edgectl_models_loaded{lane="axcl"}`:                                    "1",
		"edgectl_model_loads_total":                                             "1",
		`edgectl_ttft_seconds{model="m:latest"}`:                                "1", // histogram: its count
		`edgectl_decode_tokens_per_second{model="m:latest"}`:                    "1",
		`edgectl_queue_wait_seconds{lane="axcl"}`:                               "1",
		`edgectl_request_duration_seconds{route="/api/chat",model="m:latest"}`:  "1",
		"edgectl_queue_waiting":                                                 "0",
	} {
		if got := metric(t, ts, series); got != want {
			t.Errorf("%s = %s, want %s", series, got, want)
		}
	}
	fams := scrape(t, ts)
	for name, typ := range map[string]string{"edgectl_requests_total": "COUNTER", "edgectl_ttft_seconds": "HISTOGRAM",
		"go_goroutines": "GAUGE", "process_open_fds": "GAUGE"} {
		if f := fams[name]; f == nil || f.GetType().String() != typ {
			t.Errorf("%s: %v, want a %s", name, f.GetType(), typ)
		}
	}
}

// An upstream may share the NPU lane (e.g. main_api_* on the same card):
// it then counts against that lane's budget and concurrency.
func TestUpstreamOnSharedLane(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"from upstream\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		}
	}))
	defer up.Close()
	root := t.TempDir()
	axDir(t, root, "npu", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}, Lanes: map[string]LaneConfig{LaneAxcl: {BudgetMB: 1, Parallel: 1}},
		Upstreams: []upstream.Config{{Name: "api", URL: up.URL, Lane: LaneAxcl, SizeMB: 1}}})
	if code, m := chat(t, ts, "npu", "hi"); code != 200 || content(m) != "You said: hi (turn 1). ☕" {
		t.Fatalf("npu: %d %v", code, m)
	}
	if code, m := chat(t, ts, "api", "hi"); code != 200 || content(m) != "from upstream" {
		t.Fatalf("upstream: %d %v", code, m)
	}
	// 1 MiB budget: the upstream displaced the vendor runtime.
	eventually(t, "runtime evicted", func() bool { got := psNames(t, ts); return len(got) == 1 && got[0] == "api:latest" })
}
