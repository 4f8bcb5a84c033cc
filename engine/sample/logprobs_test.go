package sample

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// refLogprobs is log-softmax in float64 computed the plain way, as a
// reference: log(exp(x_i) / Σ exp(x_j)), with the logits shifted by their
// mean only to keep exp finite.
func refLogprobs(logits []float32) []float64 {
	var mean float64
	for _, v := range logits {
		mean += float64(v)
	}
	mean /= float64(len(logits))
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mean)
	}
	out := make([]float64, len(logits))
	for i, v := range logits {
		out[i] = math.Log(math.Exp(float64(v)-mean) / sum)
	}
	return out
}

func TestLogprobsMatchFloat64Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 32000)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 4)
	}
	logits[123], logits[456] = 19, 19 // a tie: the lower id ranks first
	ref := refLogprobs(logits)
	lp := NewLogprobs(logits, 20, nil)
	for _, id := range []int{0, 123, 456, 31999, 777} {
		if d := math.Abs(lp.Of(id) - ref[id]); d > 1e-9 {
			t.Errorf("token %d: logprob %v, reference %v", id, lp.Of(id), ref[id])
		}
	}
	// The top 20 are the 20 largest reference values, in order.
	order := make([]int, len(logits))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ref[order[a]] > ref[order[b]] })
	top := lp.Top()
	if len(top) != 20 {
		t.Fatalf("%d top tokens, want 20", len(top))
	}
	for i, id := range top {
		if id != order[i] {
			t.Fatalf("top[%d] = %d, want %d (top %v)", i, id, order[i], top)
		}
	}
	if top[0] != 123 || top[1] != 456 {
		t.Errorf("tie order: %v", top[:2])
	}
	// Probabilities sum to one.
	var sum float64
	for i := range logits {
		sum += math.Exp(lp.Of(i))
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("probabilities sum to %v", sum)
	}
}

// The logprobs come from the logits as given, not as Sample leaves them
// (penalties and temperature change them in place), and the buffer is
// reused.
func TestLogprobsAreTakenBeforeSampling(t *testing.T) {
	logits := []float32{2, 1, 0, -1}
	ref := refLogprobs(logits)
	lp := NewLogprobs(logits, 2, nil)
	smp := New(engine.Sampling{Temperature: f(0), RepeatPenalty: 2, FrequencyPenalty: 1})
	smp.Sample(logits, []int{0, 0})
	if logits[0] == 2 {
		t.Fatal("the sampler did not penalize token 0; the test needs it to")
	}
	if math.Abs(lp.Of(0)-ref[0]) > 1e-12 || lp.Top()[0] != 0 || lp.Top()[1] != 1 {
		t.Errorf("logprob %v (want %v), top %v", lp.Of(0), ref[0], lp.Top())
	}
	again := NewLogprobs([]float32{0, 5}, 5, lp)
	if again != lp || len(again.Top()) != 2 || again.Top()[0] != 1 {
		t.Errorf("reuse: %p %p top %v", again, lp, again.Top())
	}
}

func TestLogprobsNoTop(t *testing.T) {
	lp := NewLogprobs([]float32{1, 1}, 0, nil)
	if len(lp.Top()) != 0 || math.Abs(lp.Of(1)-math.Log(0.5)) > 1e-12 {
		t.Errorf("top %v, logprob %v", lp.Top(), lp.Of(1))
	}
}
