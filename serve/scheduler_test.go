package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
)

func chat(t *testing.T, ts *testServer, model, prompt string, extra ...string) (int, map[string]any) {
	t.Helper()
	body := `{"model":"` + model + `","stream":false,"messages":[{"role":"user","content":"` + prompt + `"}]`
	for _, e := range extra {
		body += "," + e
	}
	code, _, b := post(t, ts.URL+"/api/chat", body+"}")
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%d %s", code, b)
	}
	return code, m
}

func content(m map[string]any) string {
	msg, _ := m["message"].(map[string]any)
	s, _ := msg["content"].(string)
	return s
}

// Three 1 MiB NPU models on a 2 MiB budget: the least recently used idle
// one is evicted, and its runtime process is stopped.
func TestLRUEvictionUnderMemoryBudget(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		axDir(t, root, n, `{"token_delay_ms": 1}`, 1)
	}
	ts := start(t, Options{ModelDirs: []string{root}, Lanes: map[string]LaneConfig{LaneAxcl: {BudgetMB: 2, Parallel: 1}}})
	for _, n := range []string{"a", "b", "a"} {
		if code, m := chat(t, ts, n, "hi "+n); code != 200 || content(m) != "You said: hi "+n+" (turn 1). ☕" {
			t.Fatalf("%s: %d %v", n, code, m)
		}
	}
	if got := psNames(t, ts); !slices.Equal(got, []string{"a:latest", "b:latest"}) {
		t.Fatalf("ps %v", got)
	}
	if code, _ := chat(t, ts, "c", "hi"); code != 200 {
		t.Fatal(code)
	}
	eventually(t, "b evicted", func() bool { return slices.Equal(psNames(t, ts), []string{"a:latest", "c:latest"}) })
	if got := metric(t, ts, "edgectl_evictions_total"); got != "1" {
		t.Errorf("evictions %s", got)
	}
	if got := metric(t, ts, `edgectl_lane_memory_bytes{lane="axcl"}`); got != "2097152" {
		t.Errorf("lane memory %s", got)
	}
	// A model used again is reloaded transparently.
	if code, m := chat(t, ts, "b", "back"); code != 200 || content(m) != "You said: back (turn 1). ☕" {
		t.Fatalf("%d %v", code, m)
	}
	if got := metric(t, ts, "edgectl_model_loads_total"); got != "4" {
		t.Errorf("loads %s, want 4", got)
	}
}

func TestKeepAliveLoadUnloadAndExpiry(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "m", `{"start_delay_ms": 200}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})

	// Empty prompt loads (Ollama), reporting the load time.
	code, _, b := post(t, ts.URL+"/api/generate", `{"model":"m","keep_alive":-1}`)
	var r map[string]any
	json.Unmarshal(b, &r)
	if code != 200 || r["done"] != true || r["done_reason"] != "load" || r["load_duration"].(float64) < 200e6 {
		t.Fatalf("load: %d %s", code, b)
	}
	_, ps := get(t, ts.URL+"/api/ps")
	if !strings.Contains(string(ps), `"expires_at":"2318-`) || !strings.Contains(string(ps), `"lane":"axcl"`) {
		t.Errorf("keep_alive -1 should never expire: %s", ps)
	}
	// keep_alive 0 with no prompt unloads.
	code, _, b = post(t, ts.URL+"/api/chat", `{"model":"m","messages":[],"keep_alive":0}`)
	json.Unmarshal(b, &r)
	if code != 200 || r["done_reason"] != "unload" {
		t.Fatalf("unload: %d %s", code, b)
	}
	eventually(t, "unload", func() bool { return len(psNames(t, ts)) == 0 })

	// A number is seconds: the model expires on its own after 0.3 s idle.
	before := time.Now()
	if code, _ := chat(t, ts, "m", "x", `"keep_alive":0.3`); code != 200 {
		t.Fatal(code)
	}
	_, ps = get(t, ts.URL+"/api/ps")
	var p struct {
		Models []struct {
			ExpiresAt time.Time `json:"expires_at"`
		}
	}
	json.Unmarshal(ps, &p)
	if len(p.Models) != 1 || p.Models[0].ExpiresAt.Before(before) || p.Models[0].ExpiresAt.After(time.Now().Add(time.Second)) {
		t.Errorf("expires_at %s", ps)
	}
	eventually(t, "keep_alive expiry", func() bool { return len(psNames(t, ts)) == 0 })

	// A duration string works on the OpenAI route too (an extension).
	code, _, b = post(t, ts.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}],"keep_alive":"0s"}`)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	eventually(t, "keep_alive 0s unload", func() bool { return len(psNames(t, ts)) == 0 })
}

// One slot, a queue of one: the third concurrent request gets 503 with
// Retry-After, which openai-go surfaces as an *openai.Error.
func TestQueueFullAnswers503(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "m", `{"token_delay_ms": 30}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}, MaxQueue: 1, RetryAfter: 3 * time.Second})
	chat(t, ts, "m", "warm") // loaded

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	go func() { // holds the slot
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/api/generate", strings.NewReader(`{"model":"m","prompt":"LONG"}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			bufio.NewReader(resp.Body).ReadString('\n')
			close(started)
			<-ctx.Done()
			resp.Body.Close()
		}
	}()
	<-started
	go func() { // waits in the queue
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/api/generate", strings.NewReader(`{"model":"m","prompt":"queued"}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	eventually(t, "one request queued", func() bool { return metric(t, ts, "edgectl_queue_waiting") == "1" })

	code, hdr, b := post(t, ts.URL+"/api/generate", `{"model":"m","prompt":"third"}`)
	if code != 503 || hdr.Get("Retry-After") != "3" || !strings.Contains(string(b), "server busy, please try again.  maximum pending requests exceeded") {
		t.Errorf("ollama: %d %v %s", code, hdr, b)
	}
	_, err := ts.chat().New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("third")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Response.Header.Get("Retry-After") != "3" {
		t.Errorf("openai: %v", err)
	}
	if got := metric(t, ts, "edgectl_rejected_total"); got != "2" {
		t.Errorf("rejected %s", got)
	}
}

// A client that goes away mid-stream stops the generation: the runtime is
// interrupted (not killed) and the next request runs at once on the same
// process.
func TestClientGoneCancelsGeneration(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "m", `{"token_delay_ms": 50}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := ts.chat().NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("LONG")}})
	n := 0
	for stream.Next() {
		if n++; n == 4 {
			cancel()
			break
		}
	}
	stream.Close()
	// LONG is 400 tokens × 50 ms = 20 s; the next request finishing within
	// 10 s shows the first one stopped when its client left.
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	resp, err := ts.chat().New(rctx, openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("next")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "You said: next (turn 1). ☕" {
		t.Errorf("next answer %q", got)
	}
	if got := metric(t, ts, "edgectl_model_loads_total"); got != "1" {
		t.Errorf("loads %s: the runtime was restarted instead of interrupted", got)
	}
	if got := metric(t, ts, `edgectl_requests_total{route="/v1/chat/completions",model="m:latest",code="499"}`); got != "1" {
		t.Errorf("cancelled request not recorded as 499: %s", got)
	}
}

// The fake runtime hangs mid-stream ignoring ^C and SIGTERM: the watchdog
// kills it, the request gets an error, and the lane is restarted so the
// next request succeeds.
func TestWatchdogKillsHungLaneAndRecovers(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "m", `{"start_delay_ms": 100}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}, Watchdog: 700 * time.Millisecond, WatchdogGrace: 3 * time.Second})

	// Streaming: the error arrives in-band and openai-go reports it.
	stream := ts.chat().NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("HANG please")}})
	var got strings.Builder
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			got.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "stopped producing tokens") {
		t.Fatalf("stream error %v", err)
	}
	if got.String() != "You said: " {
		t.Errorf("text before the hang %q", got.String())
	}
	if m := metric(t, ts, "edgectl_watchdog_kills_total"); m != "1" {
		t.Errorf("watchdog kills %s", m)
	}
	// Restarted in the background: a second load happens without a request.
	eventually(t, "lane restart", func() bool { return metric(t, ts, "edgectl_model_loads_total") == "2" })
	if code, m := chat(t, ts, "m", "are you back"); code != 200 || content(m) != "You said: are you back (turn 1). ☕" {
		t.Fatalf("after the watchdog: %d %v", code, m)
	}

	// Non-streaming: a 500 with the reason.
	code, _, b := post(t, ts.URL+"/api/generate", `{"model":"m","prompt":"HANG again","stream":false}`)
	if code != 500 || !strings.Contains(string(b), "watchdog") {
		t.Errorf("non-stream hang: %d %s", code, b)
	}
	eventually(t, "second restart", func() bool { return metric(t, ts, "edgectl_model_loads_total") == "3" })
	if code, m := chat(t, ts, "m", "again"); code != 200 || content(m) != "You said: again (turn 1). ☕" {
		t.Fatalf("after the second hang: %d %v", code, m)
	}
}

// A runtime that crashes mid-stream: the request fails, the dead model is
// dropped, and the next request reloads it.
func TestCrashedRuntimeIsReloaded(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "m", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	code, _, b := post(t, ts.URL+"/api/chat", `{"model":"m","messages":[{"role":"user","content":"CRASH"}]}`)
	lines := ndjson(t, b)
	last := lines[len(lines)-1]
	if code != 200 || !strings.Contains(last["error"].(string), "Segmentation fault") {
		t.Fatalf("crash mid-stream: %d %s", code, b)
	}
	eventually(t, "dead model dropped", func() bool { return len(psNames(t, ts)) == 0 })
	if code, m := chat(t, ts, "m", "hello"); code != 200 || content(m) != "You said: hello (turn 1). ☕" {
		t.Fatalf("after crash: %d %v", code, m)
	}
}

// A client that gives up during a slow load does not waste it: the model
// finishes loading and the next request uses it.
func TestLoadOutlivesImpatientClient(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "slow", `{"start_delay_ms": 800}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := ts.chat().New(ctx, openai.ChatCompletionNewParams{
		Model: "slow", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	eventually(t, "load to finish", func() bool { return len(psNames(t, ts)) == 1 })
	if code, _ := chat(t, ts, "slow", "hi"); code != 200 {
		t.Fatal(code)
	}
	if got := metric(t, ts, "edgectl_model_loads_total"); got != "1" {
		t.Errorf("loads %s", got)
	}
}

// The NPU lane runs one request at a time across all its models: a request
// for a second model waits (queued) while the first streams, and runs as
// soon as the first client leaves.
func TestLaneConcurrencyAcrossModels(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "a", `{"token_delay_ms": 40}`, 1)
	axDir(t, root, "b", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}, Lanes: map[string]LaneConfig{LaneAxcl: {Parallel: 1}}})
	chat(t, ts, "b", "warm")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := ts.chat().NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "a", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("LONG")}})
	stream.Next()
	stream.Next() // a is generating
	done := make(chan string, 1)
	go func() {
		code, m := chat(t, ts, "b", "second")
		done <- fmt.Sprint(code, " ", content(m))
	}()
	eventually(t, "b queued behind a", func() bool { return metric(t, ts, "edgectl_queue_waiting") == "1" })
	if got := metric(t, ts, `edgectl_lane_busy{lane="axcl"}`); got != "1" {
		t.Errorf("lane busy %s", got)
	}
	select {
	case r := <-done:
		t.Fatalf("b ran while a held the lane: %s", r)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	stream.Close()
	select {
	case r := <-done:
		if r != "200 You said: second (turn 1). ☕" {
			t.Errorf("b: %s", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b never ran after a's client left")
	}
}

// A runtime that crashes and leaves its CMM pool allocated (ax-llm#60):
// the unload's axcl-smi check reports it in the log and in /metrics, and the
// model is still reloaded for the next request.
func TestLeakedNPUMemoryIsReported(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	axDir(t, root, "m", `{"state_dir": "`+state+`", "cmm_mb": 700}`, 1)
	bin := fakeRuntime(t)
	var logs safeLog
	ts := start(t, Options{ModelDirs: []string{root}, Logf: logs.printf, Engines: map[string]engine.Engine{
		LaneAxcl: axcl.New(axcl.Options{Command: []string{bin, "run", "{dir}"}, StopTimeout: 500 * time.Millisecond,
			SMI: []string{bin, "--state", state}}),
	}})
	code, _, b := post(t, ts.URL+"/api/generate", `{"model":"m","prompt":"CRASH LEAK","stream":false}`)
	if code != 500 || !strings.Contains(string(b), "Segmentation fault") {
		t.Fatalf("%d %s", code, b)
	}
	eventually(t, "unload error counted", func() bool { return metric(t, ts, "edgectl_unload_errors_total") == "1" })
	if !strings.Contains(logs.String(), "NPU memory not released") {
		t.Errorf("log: %s", logs.String())
	}
	_, ps := get(t, ts.URL+"/api/ps")
	if strings.Contains(string(ps), `"name"`) {
		t.Errorf("crashed model still listed: %s", ps)
	}
}

type safeLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *safeLog) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *safeLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }
