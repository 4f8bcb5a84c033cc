package cpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

func greedy() engine.Sampling {
	z := 0.0
	return engine.Sampling{Temperature: &z}
}

func generate(t *testing.T, m engine.Model, req engine.Request) (string, engine.Result) {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b strings.Builder
	res, err := s.Generate(context.Background(), req, func(tk engine.Token) error { b.WriteString(tk.Text); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), res
}

func TestTinyStoriesGreedyIsFluent(t *testing.T) {
	m := loadModel(t, tinyStories)
	out, res := generate(t, m, engine.Request{Prompt: "Once upon a time", MaxTokens: 60, Sampling: greedy()})
	t.Logf("%q %+v", out, res)
	words := strings.Fields(out)
	if len(words) < 20 {
		t.Fatalf("only %d words: %q", len(words), out)
	}
	// Fluent English: the common function words of children's stories
	// appear, and words are made of letters and punctuation only.
	for _, w := range []string{"the", "was", "a"} {
		if !containsWord(words, w) {
			t.Errorf("no %q in %q", w, out)
		}
	}
	for _, w := range words {
		if strings.ContainsAny(w, "\ufffd<>|") {
			t.Errorf("garbage word %q in %q", w, out)
		}
	}
	if res.PromptTokens == 0 || res.CompletionTokens == 0 || res.TTFT <= 0 || res.PrefillDuration <= 0 || res.DecodeDuration <= 0 {
		t.Errorf("result not filled: %+v", res)
	}
}

func containsWord(words []string, w string) bool {
	for _, x := range words {
		if strings.EqualFold(strings.Trim(x, ".,!?\"'"), w) {
			return true
		}
	}
	return false
}

func TestGenerateStopsAndLimits(t *testing.T) {
	m := loadModel(t, tinyStories)
	full, _ := generate(t, m, engine.Request{Prompt: "Once upon a time", MaxTokens: 40, Sampling: greedy()})
	// MaxTokens.
	_, res := generate(t, m, engine.Request{Prompt: "Once upon a time", MaxTokens: 5, Sampling: greedy()})
	if res.CompletionTokens != 5 || res.FinishReason != engine.FinishLength {
		t.Errorf("MaxTokens 5: %+v", res)
	}
	// A stop string taken from the middle of the greedy output cuts it there.
	words := strings.Fields(full)
	stop := " " + words[len(words)/2]
	cut := full[:strings.Index(full, stop)]
	got, res := generate(t, m, engine.Request{Prompt: "Once upon a time", MaxTokens: 40, Stop: []string{stop}, Sampling: greedy()})
	if got != cut || res.FinishReason != engine.FinishStop {
		t.Errorf("stop %q: got %q (%s), want %q", stop, got, res.FinishReason, cut)
	}
}

func TestGenerateContextFull(t *testing.T) {
	em, err := New().Load(context.Background(), tinyStories, engine.LoadOptions{ContextLength: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	s, _ := em.NewSession()
	_, err = s.Generate(context.Background(), engine.Request{Prompt: strings.Repeat("Once upon a time ", 10)}, func(engine.Token) error { return nil })
	if !errors.Is(err, engine.ErrContextFull) || !strings.Contains(err.Error(), "context window is 8") {
		t.Fatalf("err = %v", err)
	}
	// A prompt that fits generates until the window is full.
	_, res := generate(t, em, engine.Request{Prompt: "Once", Sampling: greedy()})
	if res.FinishReason != engine.FinishLength || res.PromptTokens+res.CompletionTokens > 9 {
		t.Fatalf("%+v", res)
	}
}

func TestGenerateCancel(t *testing.T) {
	m := loadModel(t, tinyStories)
	s, _ := m.NewSession()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := s.Generate(ctx, engine.Request{Prompt: "Once upon a time", Sampling: greedy()}, func(engine.Token) error {
		n++
		if n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 3 {
		t.Fatalf("err %v after %d tokens", err, n)
	}
	// Cancelled before prefill: stops inside the forward pass.
	_, err = s.Generate(ctx, engine.Request{Prompt: "Once upon a time"}, func(engine.Token) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestSeedDeterministic(t *testing.T) {
	m := loadModel(t, tinyStories)
	temp, seed := 1.0, int64(7)
	req := engine.Request{Prompt: "Once upon a time", MaxTokens: 30, Sampling: engine.Sampling{Temperature: &temp, Seed: &seed, TopK: 40, TopP: 0.9}}
	a, _ := generate(t, m, req)
	b, _ := generate(t, m, req)
	if a != b {
		t.Fatalf("same seed, different text:\n%q\n%q", a, b)
	}
	seed2 := int64(8)
	req.Sampling.Seed = &seed2
	c, _ := generate(t, m, req)
	if c == a {
		t.Errorf("seeds 7 and 8 gave the same 30 tokens: %q", a)
	}
}

func TestSessionReusesPrefix(t *testing.T) {
	m := loadModel(t, tinyStories)
	s, _ := m.NewSession()
	ctx := context.Background()
	var first strings.Builder
	s.Generate(ctx, engine.Request{Prompt: "Once upon a time", MaxTokens: 10, Sampling: greedy()}, func(tk engine.Token) error { first.WriteString(tk.Text); return nil })
	// The same prompt again in the same session must give the same text
	// (the cache is cut back to the shared prefix, not reused past it).
	var again strings.Builder
	s.Generate(ctx, engine.Request{Prompt: "Once upon a time", MaxTokens: 10, Sampling: greedy()}, func(tk engine.Token) error { again.WriteString(tk.Text); return nil })
	if first.String() != again.String() {
		t.Fatalf("%q vs %q", first.String(), again.String())
	}
}

func TestSeveralModelsAndClose(t *testing.T) {
	a := loadModel(t, tinyStories)
	b := loadModel(t, tinyStories)
	// Two models, sessions generating concurrently.
	done := make(chan string, 4)
	for _, m := range []engine.Model{a, b, a, b} {
		go func() {
			s, _ := m.NewSession()
			var sb strings.Builder
			s.Generate(context.Background(), engine.Request{Prompt: "Once upon a time", MaxTokens: 20, Sampling: greedy()},
				func(tk engine.Token) error { sb.WriteString(tk.Text); return nil })
			done <- sb.String()
		}()
	}
	first := <-done
	for range 3 {
		if got := <-done; got != first {
			t.Fatalf("concurrent greedy outputs differ: %q vs %q", got, first)
		}
	}
	s, _ := b.NewSession()
	b.Close()
	if _, err := s.Generate(context.Background(), engine.Request{Prompt: "Once"}, func(engine.Token) error { return nil }); err == nil {
		t.Fatal("Generate after Close succeeded")
	}
}
