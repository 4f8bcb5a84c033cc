package sample

import (
	"math"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

func f(v float64) *float64 { return &v }
func s(v int64) *int64     { return &v }

// logitsFor returns logits whose softmax is p.
func logitsFor(p ...float64) []float32 {
	out := make([]float32, len(p))
	for i, v := range p {
		out[i] = float32(math.Log(v))
	}
	return out
}

func counts(t *testing.T, sp engine.Sampling, p []float64, n int) []int {
	t.Helper()
	smp := New(sp)
	c := make([]int, len(p))
	for range n {
		c[smp.Sample(logitsFor(p...), nil)]++
	}
	return c
}

func TestGreedy(t *testing.T) {
	smp := New(engine.Sampling{Temperature: f(0)})
	if !smp.Greedy() || smp.Sample([]float32{0.1, 3, 2.9, -1}, nil) != 1 {
		t.Fatal("greedy did not pick the argmax")
	}
}

func TestTemperatureFollowsSoftmax(t *testing.T) {
	p := []float64{0.5, 0.3, 0.2}
	c := counts(t, engine.Sampling{Temperature: f(1), Seed: s(1)}, p, 20000)
	for i := range p {
		got := float64(c[i]) / 20000
		if math.Abs(got-p[i]) > 0.02 {
			t.Errorf("token %d drawn %.3f of the time, want %.3f", i, got, p[i])
		}
	}
}

func TestTopKTopPMinP(t *testing.T) {
	p := []float64{0.4, 0.3, 0.2, 0.1}
	if c := counts(t, engine.Sampling{Temperature: f(1), TopK: 2, Seed: s(2)}, p, 2000); c[2]+c[3] != 0 || c[1] == 0 {
		t.Errorf("top-k 2: %v", c)
	}
	// top-p 0.65: 0.4+0.3 reaches it, so tokens 2 and 3 never appear.
	if c := counts(t, engine.Sampling{Temperature: f(1), TopP: 0.65, Seed: s(3)}, p, 2000); c[2]+c[3] != 0 || c[1] == 0 {
		t.Errorf("top-p 0.65: %v", c)
	}
	// min-p 0.6: keep p ≥ 0.6·0.4 = 0.24, i.e. tokens 0 and 1.
	if c := counts(t, engine.Sampling{Temperature: f(1), MinP: 0.6, Seed: s(4)}, p, 2000); c[2]+c[3] != 0 || c[1] == 0 {
		t.Errorf("min-p 0.6: %v", c)
	}
}

func TestRepeatPenalty(t *testing.T) {
	smp := New(engine.Sampling{Temperature: f(0), RepeatPenalty: 1.2})
	if got := smp.Sample([]float32{2.0, 1.9, -1}, []int{0}); got != 1 {
		t.Errorf("penalized token still chosen: %d", got)
	}
	// Negative logits are pushed further down, not up.
	if got := smp.Sample([]float32{-1.0, -1.1}, []int{0}); got != 1 {
		t.Errorf("negative logit penalty: %d", got)
	}
	// Outside the window the token is not penalized.
	smp = New(engine.Sampling{Temperature: f(0), RepeatPenalty: 1.2, RepeatLastN: 1})
	if got := smp.Sample([]float32{2.0, 1.9, -1}, []int{0, 2}); got != 0 {
		t.Errorf("window ignored: %d", got)
	}
}

func TestSeedDeterministic(t *testing.T) {
	p := []float64{0.25, 0.25, 0.25, 0.25}
	a := counts(t, engine.Sampling{Temperature: f(1), Seed: s(42)}, p, 1)
	for range 5 {
		if b := counts(t, engine.Sampling{Temperature: f(1), Seed: s(42)}, p, 1); b[0] != a[0] || b[1] != a[1] {
			t.Fatal("same seed, different draw")
		}
	}
	seq := func(seed int64) (out []int) {
		smp := New(engine.Sampling{Temperature: f(1), Seed: &seed})
		for range 50 {
			out = append(out, smp.Sample(logitsFor(p...), nil))
		}
		return
	}
	x, y, z := seq(5), seq(5), seq(6)
	same := func(a, b []int) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if !same(x, y) || same(x, z) {
		t.Fatal("sequences: same seed must repeat, different seeds must differ")
	}
}

// A negative window penalizes the whole history (Ollama's repeat_last_n
// -1) instead of slicing past its end.
func TestRepeatWindowWholeHistory(t *testing.T) {
	greedy := 0.0
	logits := []float32{2, 1.9, 0}
	history := make([]int, 500) // token 0 first, then token 2
	for i := 1; i < len(history); i++ {
		history[i] = 2
	}
	for _, n := range []int{-1, 1} {
		p := New(engine.Sampling{Temperature: &greedy, RepeatPenalty: 2, RepeatLastN: n})
		got := p.Sample(append([]float32(nil), logits...), history)
		// Token 0 is 500 tokens back: only the whole-history window sees it.
		if want := map[int]int{-1: 1, 1: 0}[n]; got != want {
			t.Errorf("window %d: token %d, want %d", n, got, want)
		}
	}
}
