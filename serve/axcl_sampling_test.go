package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/engine/tokenizer"
)

// npuModel serves one fake-runtime model "npu" whose directory also holds
// files (name → contents), and returns an OpenAI client, the directory and
// the lane's log.
func npuModel(t *testing.T, files map[string]string) (openai.Client, string, *logLines) {
	t.Helper()
	logs := &logLines{}
	root := t.TempDir()
	dir := axDir(t, root, "npu", `{}`, 1)
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{
		LaneAxcl: axcl.New(axcl.Options{Command: []string{fakeRuntime(t), "run", "{dir}"}, StopTimeout: time.Second, SMI: []string{}, Logf: logs.logf}),
	}})
	return ts.client(), dir, logs
}

const modelPost = `{"enable_temperature": true, "temperature": 0.6, "enable_repetition_penalty": false, "repetition_penalty": 1.0,
 "penalty_window": 20, "enable_top_p_sampling": false, "top_p": 0.8, "enable_top_k_sampling": true, "top_k": 20}`

// appliedSampling asks the fake runtime which post_config it loaded.
func appliedSampling(t *testing.T, cl openai.Client, p openai.ChatCompletionNewParams) (map[string]any, map[string]any) {
	t.Helper()
	p.Model, p.Messages = "npu", []openai.ChatCompletionMessageParamUnion{user("SAMPLING")}
	resp, err := cl.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	a := resp.Choices[0].Message.Content
	if err := json.Unmarshal([]byte(strings.TrimPrefix(a, "sampling=")), &got); err != nil {
		t.Fatalf("runtime answered %q: %v", a, err)
	}
	var raw struct {
		Usage struct {
			Metrics struct {
				Hardware map[string]any `json:"hardware"`
			} `json:"metrics"`
		} `json:"usage"`
	}
	json.Unmarshal([]byte(resp.RawJSON()), &raw)
	return got, raw.Usage.Metrics.Hardware
}

// Request sampling reaches the runtime through a per-model post_config.json
// and a restart; the same sampling again restarts nothing, and a request
// without sampling goes back to the model's own file.
func TestNPUSamplingTakesEffect(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	cl, _, logs := npuModel(t, map[string]string{"post_config.json": modelPost})

	got, _ := appliedSampling(t, cl, openai.ChatCompletionNewParams{})
	if got["temperature"] != 0.6 || got["enable_top_k_sampling"] != true || got["top_k"] != 20.0 {
		t.Fatalf("model's own post_config not loaded: %v", got)
	}

	p := openai.ChatCompletionNewParams{Temperature: openai.Float(0.9), TopP: openai.Float(0.5)}
	got, _ = appliedSampling(t, cl, p)
	want := map[string]any{"enable_temperature": true, "temperature": 0.9, "enable_top_p_sampling": true, "top_p": 0.5, "enable_top_k_sampling": false}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (runtime loaded %v)", k, got[k], v, got)
		}
	}
	if !logs.grep("sampling temperature true/0.9, top_p true/0.5") {
		t.Errorf("no restart for the new sampling logged: %q", logs.lines)
	}

	// temperature 0 is greedy: every option off.
	got, _ = appliedSampling(t, cl, openai.ChatCompletionNewParams{Temperature: openai.Float(0)})
	if got["enable_temperature"] != false || got["enable_top_p_sampling"] != false || got["enable_top_k_sampling"] != false {
		t.Errorf("temperature 0 is not greedy: %v", got)
	}
	got, _ = appliedSampling(t, cl, openai.ChatCompletionNewParams{})
	if got["temperature"] != 0.6 || got["top_k"] != 20.0 {
		t.Errorf("no sampling fields: want the model's own back, got %v", got)
	}

	// The same sampling twice: the conversation continues, no restart.
	msgs := []openai.ChatCompletionMessageParamUnion{user("hello")}
	r1, err := cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "npu", Messages: msgs, Temperature: openai.Float(1.2)})
	if err != nil {
		t.Fatal(err)
	}
	restarts := countLines(logs, "restarting the runtime")
	msgs = append(msgs, asst(r1.Choices[0].Message.Content), user("again"))
	r2, err := cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "npu", Messages: msgs, Temperature: openai.Float(1.2)})
	if err != nil {
		t.Fatal(err)
	}
	if n := countLines(logs, "restarting the runtime"); n != restarts || !strings.Contains(r2.RawJSON(), `"conversation":"continued"`) {
		t.Errorf("same sampling restarted (%d → %d restarts): %s", restarts, n, r2.RawJSON())
	}
}

// Ollama's repeat_penalty and repeat_last_n become the runtime's
// repetition_penalty (squared) and penalty_window.
func TestNPURepeatPenaltyOllama(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ts := startNPUOllama(t)
	resp, err := http.Post(ts+"/api/chat", "application/json", strings.NewReader(
		`{"model":"npu","stream":false,"messages":[{"role":"user","content":"SAMPLING"}],"options":{"repeat_penalty":1.5,"repeat_last_n":32,"top_k":7}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Message struct{ Content string } `json:"message"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	var got map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(out.Message.Content, "sampling=")), &got); err != nil {
		t.Fatalf("status %d, answer %q", resp.StatusCode, out.Message.Content)
	}
	if got["enable_repetition_penalty"] != true || got["repetition_penalty"] != 2.25 || got["penalty_window"] != 32.0 ||
		got["enable_top_k_sampling"] != true || got["top_k"] != 7.0 {
		t.Errorf("runtime loaded %v", got)
	}
}

func startNPUOllama(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	axDir(t, root, "npu", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{
		LaneAxcl: axcl.New(axcl.Options{Command: []string{fakeRuntime(t), "run", "{dir}"}, StopTimeout: time.Second, SMI: []string{}, Logf: func(string, ...any) {}}),
	}})
	return ts.URL
}

// Sampling the runtime cannot apply is a 400 naming the field.
func TestNPUSamplingRefused(t *testing.T) {
	cl, _, _ := npuModel(t, nil)
	cases := []struct {
		field string
		opts  []option.RequestOption
		p     openai.ChatCompletionNewParams
	}{
		{"seed", nil, openai.ChatCompletionNewParams{Seed: openai.Int(7)}},
		{"min_p", []option.RequestOption{option.WithJSONSet("min_p", 0.1)}, openai.ChatCompletionNewParams{}},
		{"top_k", []option.RequestOption{option.WithJSONSet("top_k", 5)}, openai.ChatCompletionNewParams{TopP: openai.Float(0.9)}},
	}
	for _, c := range cases {
		c.p.Model, c.p.Messages = "npu", []openai.ChatCompletionMessageParamUnion{user("hi")}
		_, err := cl.Chat.Completions.New(context.Background(), c.p, c.opts...)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != c.field {
			t.Errorf("%s: want a 400 naming it, got %v", c.field, err)
		}
	}
}

// byteLevelTokenizerJSON is a GPT-2 byte-level BPE with the 256 byte
// symbols and no merges: one token a byte, like the fake runtime's
// byte tokenizer file, so the runtime's precompute_len and edgectl's
// count agree as they do for a real model's two files.
func byteLevelTokenizerJSON() string {
	sym := make([]string, 256)
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			sym[b] = string(rune(b))
		} else {
			sym[b] = string(rune(256 + n))
			n++
		}
	}
	ids := map[string]int{}
	for b, s := range sym {
		ids[s] = b
	}
	b, _ := json.Marshal(map[string]any{
		"version":       "1.0",
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"decoder":       map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model":         map[string]any{"type": "BPE", "vocab": ids, "merges": []string{}},
	})
	return string(b)
}

// usage counts come from the model's tokenizer/ directory: the answer's
// tokens, and the runtime's cache (its precompute_len) less them.
func TestNPUTokenCountsFromTokenizer(t *testing.T) {
	cl, dir, _ := npuModel(t, map[string]string{"tokenizer/tokenizer.json": byteLevelTokenizerJSON()})
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	count := func(s string) int64 { return int64(len(tok.Encode(s, false))) }
	q1, q2 := "my name is Ada", "I like tea ☕"
	r1, err := cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "npu",
		Messages: []openai.ChatCompletionMessageParamUnion{user(q1)}})
	if err != nil {
		t.Fatal(err)
	}
	a1 := r1.Choices[0].Message.Content
	if r1.Usage.CompletionTokens != count(a1) || r1.Usage.PromptTokens != count(q1) || !strings.Contains(r1.RawJSON(), `"token_count":"tokenizer"`) {
		t.Errorf("turn 1: usage %+v, want completion %d, prompt %d: %s", r1.Usage, count(a1), count(q1), r1.RawJSON())
	}
	r2, err := cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "npu",
		Messages: []openai.ChatCompletionMessageParamUnion{user(q1), asst(a1), user(q2)}})
	if err != nil {
		t.Fatal(err)
	}
	a2 := r2.Choices[0].Message.Content
	if want := count(q1) + count(a1) + count(q2); r2.Usage.CompletionTokens != count(a2) || r2.Usage.PromptTokens != want {
		t.Errorf("turn 2: usage %+v, want completion %d, prompt %d (the whole conversation)", r2.Usage, count(a2), want)
	}
}

func countLines(l *logLines, s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			n++
		}
	}
	return n
}
