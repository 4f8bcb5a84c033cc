package cpu

import (
	"context"
	"math"
	"testing"
)

// scoreText is TinyStories-like text, long enough (87 tokens with BOS)
// for ScoreTokens to run it in two prefill chunks.
const scoreText = `Once upon a time, there was a little girl named Lily. She loved to play in the park with her red ball. One day, she saw a big dog near the swings. The dog was sad because it had lost its bone. Lily wanted to help. She looked under the slide and behind the tree, and she found the bone in the sand. The dog was so happy that it wagged its tail and licked her hand. Lily smiled and said, "Now we can be friends!" From that day on, Lily and the dog played in the park every morning, and they were never sad again.`

// refTokenLogprobs is log p(ids[i] | ids[:i]) for i ≥ 1 under the float64
// reference forward pass (reference_test.go).
func refTokenLogprobs(r *refModel, ids []int) []float64 {
	logits := r.logits(ids)
	out := make([]float64, len(ids)-1)
	for i := 1; i < len(ids); i++ {
		row := logits[i-1]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, v)
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(v - mx)
		}
		out[i-1] = row[ids[i]] - mx - math.Log(sum)
	}
	return out
}

// NewRefScorer hands the float64 reference to the external tests
// (perplexity_ext_test.go, which import package bench): a function giving
// log p(ids[i] | ids[:i]) for i ≥ 1.
func NewRefScorer(t *testing.T, dir string) func(ids []int) []float64 {
	r := loadRef(t, dir)
	return func(ids []int) []float64 { return refTokenLogprobs(r, ids) }
}

// ScoreTokens gives every position's log-probability of the next token as
// the float64 reference computes it, across prefill chunks; their mean
// (log perplexity) agrees to 1e-5 relative.
func TestScoreTokensMatchFloat64Reference(t *testing.T) {
	m := loadModel(t, tinyStories)
	ref := loadRef(t, tinyStories)
	ids, err := m.Tokenize(context.Background(), scoreText, true)
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] != m.BOS() || len(ids) <= prefillChunk+1 {
		t.Fatalf("want BOS first and more than one chunk: %d tokens, first %d, BOS %d", len(ids), ids[0], m.BOS())
	}
	got, err := m.ScoreTokens(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	want := refTokenLogprobs(ref, ids)
	if len(got) != len(want) {
		t.Fatalf("%d scores for %d tokens", len(got), len(ids))
	}
	var sg, sw, worst float64
	for i := range got {
		sg, sw = sg+got[i], sw+want[i]
		worst = math.Max(worst, math.Abs(got[i]-want[i]))
	}
	if worst > 5e-4 {
		t.Errorf("largest log-probability error %.3g > 5e-4", worst)
	}
	if e := math.Abs(sg-sw) / math.Abs(sw); e > 1e-5 {
		t.Errorf("summed log-probability %.6f, reference %.6f (relative error %.3g)", sg, sw, e)
	}
	t.Logf("%d tokens: mean NLL %.5f, reference %.5f, largest error %.2g", len(got), -sg/float64(len(got)), -sw/float64(len(want)), worst)
}

// A sequence longer than the context is refused with the window size to
// use; a closed model scores nothing.
func TestScoreTokensBounds(t *testing.T) {
	m := loadModel(t, tinyStories)
	if _, err := m.ScoreTokens(context.Background(), make([]int, m.arch.ctx+1)); err == nil {
		t.Error("a sequence past the context was scored")
	}
	if got, err := m.ScoreTokens(context.Background(), []int{1}); err != nil || len(got) != 0 {
		t.Errorf("one token: %v, %v; want no scores", got, err)
	}
	m.Close()
	if _, err := m.ScoreTokens(context.Background(), []int{1, 2}); err == nil {
		t.Error("a closed model scored tokens")
	}
}

// DecodeBytes is the weights plus one K and one V float32 row per layer
// and KV head for each cached position and the new one; the bandwidth
// probe reads a positive rate.
func TestDecodeBytesRule(t *testing.T) {
	m := loadModel(t, tinyStories)
	ar := &m.arch
	row := int64(2 * 4 * ar.layers * ar.kvHeads * ar.headDim)
	for _, c := range []int{0, 1, 100} {
		w, kv := m.DecodeBytes(c)
		if w != m.weightBytes() || kv != row*int64(c+1) {
			t.Errorf("DecodeBytes(%d) = %d, %d; want %d, %d", c, w, kv, m.weightBytes(), row*int64(c+1))
		}
	}
	if bw := m.ReadBandwidth(1); !(bw > 1e8) {
		t.Errorf("read bandwidth %g B/s", bw)
	}
}
