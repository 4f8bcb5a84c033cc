package serve

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// checkFinal checks the final NDJSON object of /api/generate or /api/chat.
func checkFinal(t *testing.T, last map[string]any, wantTokens int) {
	t.Helper()
	if last["done"] != true {
		t.Fatalf("stream does not end with done:true: %v", last)
	}
	if r := last["done_reason"]; r != "stop" && r != "length" {
		t.Errorf("done_reason %v", r)
	}
	for _, k := range []string{"total_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"} {
		v, ok := last[k].(float64)
		if !ok || v <= 0 || v != float64(int64(v)) {
			t.Errorf("%s = %v, want a positive integer", k, last[k])
		}
	}
	if wantTokens > 0 && last["done_reason"] == "length" && last["eval_count"] != float64(wantTokens) {
		t.Errorf("eval_count %v with done_reason length, num_predict %d", last["eval_count"], wantTokens)
	}
	// Durations are nanoseconds: total covers prompt eval plus eval.
	if tot, pe, ev := last["total_duration"].(float64), last["prompt_eval_duration"].(float64), last["eval_duration"].(float64); tot < pe || tot < ev || tot < 1e5 {
		t.Errorf("durations total %v prompt %v eval %v (ns?)", tot, pe, ev)
	}
	m, ok := last["metrics"].(map[string]any)
	if !ok || m["ttft_ms"].(float64) <= 0 {
		t.Errorf("metrics %v", last["metrics"])
	}
}

func TestOllamaGenerateNDJSON(t *testing.T) {
	ts := tinyServer(t)
	code, hdr, body := post(t, ts.URL+"/api/generate", `{"model":"tinystories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":8}}`)
	if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %s %s", code, hdr.Get("Content-Type"), body)
	}
	lines := ndjson(t, body)
	if len(lines) < 2 {
		t.Fatalf("%d lines", len(lines))
	}
	var text strings.Builder
	for i, l := range lines[:len(lines)-1] {
		if l["model"] != "tinystories" || l["done"] != false {
			t.Errorf("line %d: %v", i, l)
		}
		ts, _ := l["created_at"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("line %d created_at %q", i, ts)
		}
		r, ok := l["response"].(string)
		if !ok {
			t.Errorf("line %d response %v", i, l["response"])
		}
		text.WriteString(r)
		for _, k := range []string{"total_duration", "eval_count", "done_reason"} {
			if _, ok := l[k]; ok {
				t.Errorf("line %d carries %s before the end", i, k)
			}
		}
	}
	last := lines[len(lines)-1]
	checkFinal(t, last, 8)
	if last["response"] != "" || text.Len() == 0 {
		t.Errorf("final response %q, streamed %q", last["response"], text.String())
	}

	// stream:false answers one object with the same text (greedy).
	code, _, body = post(t, ts.URL+"/api/generate", `{"model":"tinystories","prompt":"Once upon a time","stream":false,"options":{"temperature":0,"num_predict":8}}`)
	var one map[string]any
	json.Unmarshal(body, &one)
	if code != 200 || one["response"] != text.String() || one["done"] != true {
		t.Errorf("stream:false %d %s, streamed %q", code, body, text.String())
	}
}

func TestOllamaChatNDJSONOnVendorLane(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "qwen-npu", `{"token_delay_ms": 2, "format": "time"}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	code, _, body := post(t, ts.URL+"/api/chat", `{"model":"qwen-npu","messages":[{"role":"system","content":"be kind"},{"role":"user","content":"hello world"}]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	lines := ndjson(t, body)
	var text strings.Builder
	for i, l := range lines[:len(lines)-1] {
		msg, _ := l["message"].(map[string]any)
		if l["done"] != false || msg["role"] != "assistant" || l["model"] != "qwen-npu" {
			t.Errorf("line %d %v", i, l)
		}
		text.WriteString(msg["content"].(string))
	}
	if text.String() != "You said: hello world (turn 1). ☕" {
		t.Errorf("text %q", text.String())
	}
	last := lines[len(lines)-1]
	checkFinal(t, last, 0)
	hw := last["metrics"].(map[string]any)["hardware"].(map[string]any)
	if hw["npu_reported_tps"] != 34.04 || hw["npu_cmm_remain_mb"] == nil {
		t.Errorf("lane telemetry missing: %v", hw)
	}
	if last["metrics"].(map[string]any)["lane"] != "axcl" {
		t.Errorf("lane %v", last["metrics"])
	}
	// Nothing to say is the client's mistake, not a server error.
	if code, _, b := post(t, ts.URL+"/api/chat", `{"model":"qwen-npu","messages":[{"role":"user","content":"  "}]}`); code != 400 {
		t.Errorf("empty user message: %d %s", code, b)
	}

	// /api/tags, /api/show, /api/ps, /v1/models see the model.
	_, b := get(t, ts.URL+"/api/tags")
	var tags struct {
		Models []struct {
			Name, Digest string
			Size         int64
			Details      struct{ Format string }
		}
	}
	json.Unmarshal(b, &tags)
	if len(tags.Models) != 1 || tags.Models[0].Name != "qwen-npu:latest" || tags.Models[0].Details.Format != "axmodel" ||
		tags.Models[0].Size != 1<<20 || len(tags.Models[0].Digest) != 64 {
		t.Errorf("tags %s", b)
	}
	_, _, b = post(t, ts.URL+"/api/show", `{"model":"qwen-npu"}`)
	var show struct {
		ModelInfo    map[string]any `json:"model_info"`
		Capabilities []string
	}
	json.Unmarshal(b, &show)
	if show.ModelInfo["edgectl.lane"] != "axcl" || len(show.Capabilities) == 0 {
		t.Errorf("show %s", b)
	}
	if got := psNames(t, ts); len(got) != 1 || got[0] != "qwen-npu:latest" {
		t.Errorf("ps %v", got)
	}
	_, b = get(t, ts.URL+"/v1/models")
	if !strings.Contains(string(b), `"id":"qwen-npu:latest"`) || !strings.Contains(string(b), `"object":"list"`) {
		t.Errorf("/v1/models %s", b)
	}
	if code, b := get(t, ts.URL+"/api/version"); code != 200 || !strings.Contains(string(b), `"version"`) {
		t.Errorf("version %d %s", code, b)
	}
}

func TestOllamaErrors(t *testing.T) {
	ts := tinyServer(t)
	for name, tc := range map[string]struct {
		path, body string
		code       int
		want       string
	}{
		"not found":    {"/api/generate", `{"model":"nope","prompt":"x"}`, 404, `model "nope" not found, try pulling it first`},
		"wrong type":   {"/api/chat", `{"model":"tinystories","messages":[{"role":"user","content":"x"}],"stream":"yes"}`, 400, `"stream" must be a boolean`},
		"options type": {"/api/generate", `{"model":"tinystories","prompt":"x","options":{"num_predict":"9"}}`, 400, `"options.num_predict" must be a number`},
		"keep_alive":   {"/api/generate", `{"model":"tinystories","keep_alive":true}`, 400, "keep_alive must be a number"},
		"bad duration": {"/api/generate", `{"model":"tinystories","keep_alive":"soon"}`, 400, "keep_alive \"soon\""},
		"no model":     {"/api/chat", `{"messages":[]}`, 400, "model is required"},
		"show missing": {"/api/show", `{"model":"nope"}`, 404, "not found"},
	} {
		code, _, b := post(t, ts.URL+tc.path, tc.body)
		var e struct{ Error string }
		json.Unmarshal(b, &e)
		if code != tc.code || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s: %d %s, want %d %q", name, code, b, tc.code, tc.want)
		}
	}
	// content:null and unknown keys are fine.
	code, _, b := post(t, ts.URL+"/api/chat", `{"model":"tinystories","stream":false,"messages":[{"role":"user","content":null},{"role":"user","content":"Once"}],"options":{"num_predict":2,"num_batch":8,"mirostat":0},"extra":1}`)
	if code != 200 {
		t.Errorf("null content: %d %s", code, b)
	}
}
