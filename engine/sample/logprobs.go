package sample

import "math"

// Logprobs reports log-probabilities under the log-softmax of one
// position's logits. It is built from the raw logits, before Sample applies
// penalties and temperature: those are what OpenAI reports and what
// llama.cpp's server returns for n_probs (unless post_sampling_probs).
type Logprobs struct {
	logits []float32
	lse    float64 // log Σ exp(logit), accumulated in float64
	top    []int   // token ids, most likely first
}

// NewLogprobs copies logits (Sample modifies them afterwards) and finds
// the top most likely tokens (lowest id first on ties). buf, if it has the
// capacity, is reused for the copy.
func NewLogprobs(logits []float32, top int, buf *Logprobs) *Logprobs {
	lp := buf
	if lp == nil {
		lp = &Logprobs{}
	}
	lp.logits = append(lp.logits[:0], logits...)
	lp.lse = logSumExp(logits)
	lp.top = topIDs(logits, top, lp.top[:0])
	return lp
}

// Of is the log-probability of token id.
func (lp *Logprobs) Of(id int) float64 {
	return float64(lp.logits[id]) - lp.lse
}

// Top is the ids of the most likely tokens, most likely first.
func (lp *Logprobs) Top() []int { return lp.top }

func logSumExp(logits []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = max(mx, float64(v))
	}
	if math.IsInf(mx, 0) { // all -Inf (nothing possible), or +Inf
		return mx
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(sum)
}

// topIDs keeps the n largest logits by insertion into a short sorted list:
// one pass over the vocabulary, n ≤ 20 comparisons at most per token and
// almost always one.
func topIDs(logits []float32, n int, dst []int) []int {
	n = min(n, len(logits))
	if n <= 0 {
		return dst
	}
	for id, v := range logits {
		if len(dst) == n && v <= logits[dst[n-1]] {
			continue // ties keep the lower id, already in
		}
		i := len(dst)
		if i < n {
			dst = append(dst, id)
		} else {
			i = n - 1
		}
		for i > 0 && v > logits[dst[i-1]] {
			dst[i] = dst[i-1]
			i--
		}
		dst[i] = id
	}
	return dst
}
