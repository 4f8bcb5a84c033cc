package sample

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// maskOf allows the listed ids in a mask for n tokens.
func maskOf(n int, ids ...int) []uint64 {
	m := make([]uint64, (n+63)/64)
	for _, id := range ids {
		m[id>>6] |= 1 << (id & 63)
	}
	return m
}

// A masked token is never sampled, greedy or not, with penalties or not;
// what stays allowed keeps its relative probabilities.
func TestMaskLeavesOutDisallowedTokens(t *testing.T) {
	p := []float64{0.6, 0.25, 0.1, 0.05}
	logits := logitsFor(p...)
	if n := Mask(logits, maskOf(4, 1, 3)); n != 2 || !math.IsInf(float64(logits[0]), -1) || !math.IsInf(float64(logits[2]), -1) {
		t.Fatalf("Mask: %d allowed, logits %v", n, logits)
	}
	if got := New(engine.Sampling{Temperature: f(0)}).Sample(logits, nil); got != 1 {
		t.Errorf("greedy picked %d, want the best allowed token 1", got)
	}
	smp := New(engine.Sampling{Temperature: f(1.5), TopK: 3, TopP: 0.99, RepeatPenalty: 1.3, FrequencyPenalty: 1, PresencePenalty: 1, Seed: s(5)})
	c := make([]int, 4)
	const n = 20000
	for range n {
		l := logitsFor(p...)
		Mask(l, maskOf(4, 1, 3))
		c[smp.Sample(l, []int{0, 2, 0})]++ // penalties on the masked tokens keep them out
	}
	if c[0] != 0 || c[2] != 0 {
		t.Fatalf("masked tokens sampled: %v", c)
	}
	// At temperature 1.5 the allowed pair splits as (0.25/0.05)^(1/1.5).
	want := math.Pow(0.25/0.05, 1/1.5) / (1 + math.Pow(0.25/0.05, 1/1.5))
	if got := float64(c[1]) / n; math.Abs(got-want) > 0.015 {
		t.Errorf("allowed token 1 sampled %.3f of the time, want %.3f", got, want)
	}
}

// Ids past the mask (a padded embedding's rows) are left out; full words
// pass untouched.
func TestMaskShorterThanLogits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	logits := make([]float32, 200)
	for i := range logits {
		logits[i] = r.Float32()
	}
	orig := append([]float32(nil), logits...)
	m := maskOf(130, 5, 129)
	m[1] = ^uint64(0) // ids 64..127
	if n := Mask(logits, m); n != 66 {
		t.Errorf("%d allowed, want 66", n)
	}
	for i, v := range logits {
		allowed := i == 5 || i == 129 || i >= 64 && i < 128
		if allowed != (v == orig[i]) || !allowed && !math.IsInf(float64(v), -1) {
			t.Fatalf("id %d: %v (was %v), allowed %v", i, v, orig[i], allowed)
		}
	}
}

// BenchmarkMask: masking a 151,936-token row (Qwen's vocabulary) with a
// structural mask (a few tokens) and a string mask (nearly all).
func BenchmarkMask(b *testing.B) {
	const n = 151936
	logits := make([]float32, n)
	few := maskOf(n, 10, 500, 9000, 150000)
	most := make([]uint64, (n+63)/64)
	for i := range most {
		most[i] = ^uint64(0) &^ (1 << (i % 64))
	}
	for name, m := range map[string][]uint64{"few": few, "most": most} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				Mask(logits, m)
			}
		})
	}
	b.Run("argmax", func(b *testing.B) { // what greedy sampling reads anyway, for scale
		for b.Loop() {
			Argmax(logits)
		}
	})
}
