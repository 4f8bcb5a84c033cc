package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/internal/errkind"
)

const tinyStories = "../testdata/models/tinystories-656k"

func TestStat(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want Stat
	}{
		{[]float64{3}, Stat{3, 3, 3}},
		{[]float64{5, 1, 3}, Stat{3, 1, 5}},
		{[]float64{4, 1, 3, 10}, Stat{3.5, 1, 10}},
	} {
		if got := stat(c.v); got != c.want {
			t.Errorf("stat(%v) = %+v, want %+v", c.v, got, c.want)
		}
	}
}

// In-process prompts are exactly the asked number of token ids: the
// tokenized rule's prompt (BOS first) with a tokenizer, BOS and ids spread
// over the vocabulary without one.
func TestPromptIDs(t *testing.T) {
	m, err := cpu.New().Load(context.Background(), tinyStories, engine.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sc := m.(engine.Scorer)
	for _, n := range []int{1, 5, 16, 100} {
		ids, err := promptIDs(context.Background(), sc, 2048, n)
		if err != nil {
			t.Fatal(err)
		}
		whole, _ := sc.Tokenize(context.Background(), PromptText(0, 2*n+8), true)
		if len(ids) != n || ids[0] != sc.BOS() || !slices.Equal(ids, whole[:n]) {
			t.Errorf("%d tokens: %v", n, ids)
		}
		ids, _ = promptIDs(context.Background(), noTokenizer{bos: 7}, 50, n)
		if len(ids) != n || ids[0] != 7 || slices.ContainsFunc(ids, func(id int) bool { return id < 0 || id >= 50 }) {
			t.Errorf("%d tokens without a tokenizer: %v", n, ids)
		}
	}
}

// noTokenizer is a model file without a tokenizer, as the generated
// benchmark models are.
type noTokenizer struct{ bos int }

func (noTokenizer) Tokenize(context.Context, string, bool) ([]int, error) {
	return nil, errors.New("no tokenizer")
}
func (n noTokenizer) BOS() int                                            { return n.bos }
func (noTokenizer) ScoreTokens(context.Context, []int) ([]float64, error) { return nil, nil }

// fakeServer answers as Ollama (ollama true) or as llama-server, with
// fixed counters and durations, and keeps the generation requests' bodies.
type fakeServer struct {
	ollama bool
	mu     sync.Mutex
	bodies []map[string]any
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/api/version" && f.ollama:
		io.WriteString(w, `{"version":"0.12.0"}`)
	case r.URL.Path == "/api/show" && f.ollama:
		io.WriteString(w, `{"details":{"format":"gguf","quantization_level":"Q4_0"}}`)
	case r.URL.Path == "/health" && !f.ollama:
		io.WriteString(w, `{"status":"ok"}`)
	case r.URL.Path == "/api/generate" && f.ollama, r.URL.Path == "/v1/chat/completions" && !f.ollama:
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		if f.ollama {
			io.WriteString(w, `{"model":"m","response":"Hi","done":false}`+"\n")
			io.WriteString(w, `{"model":"m","response":"","done":true,"done_reason":"length","prompt_eval_count":10,"prompt_eval_duration":100000000,"eval_count":20,"eval_duration":400000000}`+"\n")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n")
		io.WriteString(w, `data: {"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":21},"timings":{"prompt_n":10,"prompt_ms":50,"predicted_n":21,"predicted_ms":400}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	default:
		http.NotFound(w, r)
	}
}

// A server's own counters give the rates: Ollama's eval_count ÷
// eval_duration (as Ollama reports it), llama-server's timings block
// (tokens after the first ÷ predicted_ms, as the engine counts); the
// requests are greedy, raw on Ollama, and ask for the generated tokens.
func TestRemoteRatesFromServerCounters(t *testing.T) {
	for _, c := range []struct {
		ollama                bool
		proto                 string
		prefill, decode       float64
		prompt, gen           int
		timing, format, quant string
	}{
		{true, APIOllama, 100, 50, 10, 20, "eval_duration", "gguf", "Q4_0"},
		{false, APIOpenAI, 200, 50, 10, 21, "llama-server", "", ""},
	} {
		f := &fakeServer{ollama: c.ollama}
		hs := httptest.NewServer(f)
		rep, err := RunRemote(context.Background(), Remote{URL: hs.URL + "/v1/", Model: "m"}, Options{Runs: 3, PromptTokens: 8, GenTokens: 20})
		hs.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.proto, err)
		}
		near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*b }
		if rep.Engine != c.proto || !near(rep.PrefillTPS.Median, c.prefill) || !near(rep.DecodeTPS.Max, c.decode) || rep.PromptTokens != c.prompt ||
			rep.GenTokens != c.gen || !strings.Contains(rep.Timing, c.timing) || rep.Format != c.format || rep.Quantization != c.quant || rep.BytesPerToken != nil {
			t.Errorf("%s: %+v", c.proto, rep)
		}
		if !(rep.TTFTMS.Min > 0) {
			t.Errorf("%s: TTFT %+v", c.proto, rep.TTFTMS)
		}
		if len(f.bodies) != 4 { // the warm-up and three runs
			t.Fatalf("%s: %d requests", c.proto, len(f.bodies))
		}
		b := f.bodies[3]
		if c.ollama {
			opts, _ := b["options"].(map[string]any)
			if b["raw"] != true || opts["temperature"] != 0.0 || opts["num_predict"] != 20.0 || b["prompt"] != PromptText(3, 8) {
				t.Errorf("ollama request %v", b)
			}
		} else if b["temperature"] != 0.0 || b["max_tokens"] != 20.0 || b["stream"] != true || b["model"] != "m" {
			t.Errorf("openai request %v", b)
		}
		// Consecutive runs start with different words, so no server can
		// reuse the previous prompt's cache.
		if c.ollama && f.bodies[2]["prompt"] == f.bodies[3]["prompt"] {
			t.Errorf("runs 2 and 3 sent the same prompt %q", f.bodies[2]["prompt"])
		}
	}
}

// A server's refusals keep their meaning in the exit code: a wrong key is
// auth, an unknown model not found, an overloaded server busy.
func TestRemoteErrorKinds(t *testing.T) {
	for _, c := range []struct {
		status int
		kind   errkind.Kind
	}{{401, errkind.Auth}, {404, errkind.NotFound}, {503, errkind.Busy}, {500, errkind.None}} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/version" {
				io.WriteString(w, `{"version":"0.12.0"}`)
				return
			}
			w.WriteHeader(c.status)
			io.WriteString(w, `{"error":"no"}`)
		}))
		_, err := RunRemote(context.Background(), Remote{URL: hs.URL, Model: "m"}, Options{Runs: 1, PromptTokens: 4, GenTokens: 2})
		hs.Close()
		if err == nil || errkind.Of(err) != c.kind || strings.Contains(err.Error(), "\n") {
			t.Errorf("status %d: %v (kind %v), want kind %v", c.status, err, errkind.Of(err), c.kind)
		}
	}
}
