package cpu

import (
	"bytes"
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// generateTokens runs req and returns the emitted tokens.
func generateTokens(t *testing.T, m engine.Model, req engine.Request) ([]engine.Token, engine.Result) {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var toks []engine.Token
	res, err := s.Generate(context.Background(), req, func(tk engine.Token) error { toks = append(toks, tk); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return toks, res
}

func logprobsOf(toks []engine.Token) (lps []engine.TokenLogprob, text string) {
	var b strings.Builder
	for _, tk := range toks {
		lps = append(lps, tk.Logprobs...)
		b.WriteString(tk.Text)
	}
	return lps, b.String()
}

// The reported log-probabilities are the float64 log-softmax of the raw
// logits at each position: the test replays prompt and output through a
// fresh state (the same forward passes) and computes them itself. A
// frequency penalty changes what is sampled, not what is reported.
func TestLogprobsMatchReplayedLogits(t *testing.T) {
	m := loadModel(t, tinyStories)
	z := 0.0
	req := engine.Request{Prompt: "Once upon a time", MaxTokens: 24, Logprobs: true, TopLogprobs: 5,
		Sampling: engine.Sampling{Temperature: &z, FrequencyPenalty: 2, PresencePenalty: 2}}
	toks, res := generateTokens(t, m, req)
	lps, text := logprobsOf(toks)
	if len(lps) != res.CompletionTokens || res.CompletionTokens == 0 {
		t.Fatalf("%d logprob entries for %d tokens", len(lps), res.CompletionTokens)
	}
	var all []byte
	for _, lp := range lps {
		all = append(all, lp.Bytes...)
	}
	if string(all) != text {
		t.Errorf("token bytes %q, text %q", all, text)
	}

	sess, _ := m.NewSession()
	defer sess.Close()
	s := sess.(*session)
	ids, err := s.prompt(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := s.st.forward(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	penalized := 0
	for i, lp := range lps {
		ref := logSoftmax64(logits)
		if d := math.Abs(lp.Logprob.Logprob - ref[lp.ID]); d > 1e-9 {
			t.Errorf("token %d (%d %q): logprob %v, reference %v", i, lp.ID, lp.Bytes, lp.Logprob.Logprob, ref[lp.ID])
		}
		order := make([]int, len(ref))
		for j := range order {
			order[j] = j
		}
		sort.SliceStable(order, func(a, b int) bool { return ref[order[a]] > ref[order[b]] })
		if len(lp.Top) != 5 {
			t.Fatalf("token %d: %d top entries, want 5", i, len(lp.Top))
		}
		for j, alt := range lp.Top {
			if alt.ID != order[j] || math.Abs(alt.Logprob-ref[alt.ID]) > 1e-9 || !bytes.Equal(alt.Bytes, m.tok.Piece(alt.ID)) {
				t.Errorf("token %d top[%d] = %d %q %v, reference %d %v", i, j, alt.ID, alt.Bytes, alt.Logprob, order[j], ref[order[j]])
			}
		}
		if lp.ID != order[0] {
			penalized++ // greedy, so only the penalty moves it off the argmax
		}
		if logits, err = s.st.forward(context.Background(), []int{lp.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if penalized == 0 {
		t.Errorf("%q: the penalties never moved greedy decoding off the raw argmax", text)
	}
}

func logSoftmax64(logits []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	out := make([]float64, len(logits))
	for i, v := range logits {
		out[i] = math.Log(math.Exp(float64(v)-mx) / sum)
	}
	return out
}

// A stop string cuts the log-probabilities with the text: the tokens that
// begin before it are reported, and their bytes cover the output.
func TestLogprobsStopAtStopString(t *testing.T) {
	m := loadModel(t, tinyStories)
	full, _ := generate(t, m, engine.Request{Prompt: "Once upon a time", MaxTokens: 30, Sampling: greedy()})
	words := strings.Fields(full)
	stop := " " + words[len(words)/2]
	toks, res := generateTokens(t, m, engine.Request{Prompt: "Once upon a time", MaxTokens: 30, Stop: []string{stop},
		Logprobs: true, Sampling: greedy()})
	lps, text := logprobsOf(toks)
	var all []byte
	for _, lp := range lps {
		all = append(all, lp.Bytes...)
		if len(lp.Top) != 0 {
			t.Errorf("top entries without TopLogprobs: %v", lp.Top)
		}
	}
	if res.FinishReason != engine.FinishStop || !strings.HasPrefix(string(all), text) || len(all)-len(text) >= len(stop) ||
		len(lps) >= res.CompletionTokens {
		t.Errorf("stop %q: text %q, token bytes %q, %d entries for %d tokens", stop, text, all, len(lps), res.CompletionTokens)
	}
	// Without Logprobs no entries travel.
	toks, _ = generateTokens(t, m, engine.Request{Prompt: "Once upon a time", MaxTokens: 5, Sampling: greedy()})
	if lps, _ := logprobsOf(toks); len(lps) != 0 {
		t.Errorf("%d entries unasked", len(lps))
	}
}

// ContextLimit caps prompt and output below the loaded context.
func TestContextLimitPerRequest(t *testing.T) {
	m := loadModel(t, tinyStories)
	_, base := generate(t, m, engine.Request{Prompt: "Once upon a time", MaxTokens: 1, Sampling: greedy()})
	n := base.PromptTokens
	_, res := generate(t, m, engine.Request{Prompt: "Once upon a time", ContextLimit: n + 3, MaxTokens: 50, Sampling: greedy()})
	if res.CompletionTokens != 3 || res.FinishReason != engine.FinishLength {
		t.Errorf("limit %d: %+v", n+3, res)
	}
	_, res = generate(t, m, engine.Request{Prompt: "Once upon a time", ContextLimit: n + 3, MaxTokens: 2, Sampling: greedy()})
	if res.CompletionTokens != 2 {
		t.Errorf("MaxTokens below the limit: %+v", res)
	}
	s, _ := m.NewSession()
	defer s.Close()
	_, err := s.Generate(context.Background(), engine.Request{Prompt: "Once upon a time", ContextLimit: n}, func(engine.Token) error { return nil })
	if !errors.Is(err, engine.ErrContextFull) || !strings.Contains(err.Error(), "limits the context to") {
		t.Errorf("prompt of %d tokens, limit %d: %v", n, n, err)
	}
}
