package cpu

import "math"

// The block heads with exact candidates (head forms "q4x", "q3x", "q2x";
// this comment tells q4x's case, the others differ in their sketch's type
// and K). The Q4_K head (head4.go) reads 185 MB a BitNet-2B token
// against the int8 head's 328, but its logits lie up to ~10% of their
// range from the float head's, so its greedy text parts from the float
// head's within 0–25 tokens on the fixtures. Which token wins is decided
// among a few: the float head's argmax lies within the 4-bit head's first
// few ranks (measured, see head4xCandidates). So q4x computes every logit
// with the Q4_K head, takes its top head4xCandidates, and recomputes just
// those rows exactly from the float rows with the float head's own
// kernels (the same floatRows.mul, on the same activations: bit for bit
// the float head's logits). K rows of
// BitNet-2B's F16 head are 32 × 5 KB = 164 KB a token, 0.1% of the 4-bit
// head's bytes.
//
// The float rows are not a second resident copy: a tied head's are the
// embedding table, which stays the file mapping for lookups anyway; an
// untied head's stay the file mapping too (the model keeps its files
// mapped until Close), their pages dropped after quantizing, so what a
// model holds resident of them is what the candidates' faults mapped —
// ~200 KB around each touched row (the kernel maps neighbouring cached
// pages too), +0.21 GB peak RSS over ~100 BitNet-2B tokens, at most the
// head's file bytes — file-backed pages the kernel may reclaim.
//
// Greedy decoding follows the float head's argmax whenever it is among
// the candidates. Every other logit keeps its 4-bit value, capped just
// under the lowest exact candidate logit: the 4-bit head ranked them
// below all the candidates, and the cap keeps that order, so a candidate
// whose exact logit fell under the K+1-th 4-bit logit cannot hand the
// argmax to a token that was never re-scored. (With K = 1 the argmax is
// then plain q4's: TestHead4xGreedyMatchesFloat.) Sampling sees exact logits for the
// candidates and 4-bit ones, capped, for the rest; top logprobs
// (engine.MaxTopLogprobs = 20 ≤ K) are all candidates, with exact logits,
// normalized over that mixed vector.

// head4xCandidates is K, the candidates re-scored a token. The float
// head's argmax fell at most to rank 4 (0 is first) of the 4-bit order
// over ~1100 positions of the fixtures' greedy and sampled texts
// (TestHead4xGreedyMatchesFloat, which keeps a 4× margin), and to rank 5
// over 200 positions of the generated BitNet-2B (BenchmarkHead4xRescore);
// 32 leaves a 6× margin there. A token's re-scoring costs ~50 µs for the
// top-K pass over 128256 logits and ~2–4 µs a row (the rows' pages fault
// back in from the page cache): 135, 166 and 235 µs for K = 16, 32, 64.
const head4xCandidates = 32

// head3xCandidates and head2xCandidates are q3x's and q2x's K, chosen
// with at least q4x's margin (K over the worst rank + 1: q4x 32/5 = 6.4 on
// the fixtures, 32/6 = 5.3 on the generated BitNet-2B). The float
// argmax's worst rank in the Q3_K sketch: 8 over ~1100 fixture positions
// (TestHead4xGreedyMatchesFloat), 7 over 200 BitNet-2B positions
// (BenchmarkHead4xRescore): 48 leaves 5.3× and 6×. In the Q2_K sketch: 34
// and 24 (median 0 and 1): 192 leaves 5.5× and 7.7×. Re-scoring costs
// ~0.25 ms a BitNet-2B token at K = 48, ~0.5–0.6 ms at 160–192 (load
// average ~4), and K rows of 5 KB are read.
const (
	head3xCandidates = 48
	head2xCandidates = 192
)

// maxCandidates is the largest K rescore takes (its arrays): twice the
// largest of blockHeads', for the benchmarks.
const maxCandidates = 2 * head2xCandidates

// exactHead re-scores the 4-bit head's top k logits against the float
// rows f.
type exactHead struct {
	f *floatRows
	k int
}

// bytes is what the re-scoring reads a token: k float rows (the top-k
// pass reads the logits, not weights).
func (h *exactHead) bytes() int64 {
	if h == nil || h.f.r == 0 {
		return 0
	}
	return int64(h.k) * int64(len(h.f.raw)/h.f.r)
}

// rescore overwrites the k largest of logits (one token's, from the 4-bit
// head) with the float head's values for activations x, and caps the
// others at the lowest of those. A nil h does nothing.
func (h *exactHead) rescore(kern *kernels, logits, x []float32) {
	if h == nil || len(logits) == 0 {
		return
	}
	var idx [maxCandidates]int32
	var val [maxCandidates]float32
	k := min(h.k, maxCandidates)
	n := topLogits(logits, idx[:k], val[:k])
	if n == 0 {
		return
	}
	bound := val[n-1] // every other logit is ≤ this
	a := acts{kern: kern, n: 1, k: h.f.c, f: x}
	low := float32(math.Inf(1))
	for _, r := range idx[:n] {
		h.f.mul(logits, 0, &a, int(r), int(r)+1)
		low = min(low, logits[r])
	}
	if !(low < bound) {
		return
	}
	below := math.Nextafter32(low, float32(math.Inf(-1))) // a tie would let the lower index win
	for j, v := range logits {
		if v >= low && !isCandidate(idx[:n], j) {
			logits[j] = below
		}
	}
}

// topLogits fills idx and val with the indices and values of the
// len(idx) largest logits, largest first, and returns how many it found
// (fewer only for a shorter logits). After the first k, a logit costs one
// compare with the k-th largest held in a register (~40 µs for
// BitNet-2B's 128256, where a compare against val[k−1] in memory took 120).
func topLogits(logits []float32, idx []int32, val []float32) int {
	k := min(len(idx), len(logits))
	for j := range k {
		insertTop(idx[:j+1], val[:j+1], logits[j], j)
	}
	if k == 0 {
		return 0
	}
	th := val[k-1]
	for j, v := range logits[k:] {
		if v > th {
			insertTop(idx[:k], val[:k], v, k+j)
			th = val[k-1]
		}
	}
	return k
}

// insertTop puts v (logit j) into the descending idx/val, dropping the
// last entry.
func insertTop(idx []int32, val []float32, v float32, j int) {
	i := len(val) - 1
	for i > 0 && val[i-1] < v {
		val[i], idx[i] = val[i-1], idx[i-1]
		i--
	}
	val[i], idx[i] = v, int32(j)
}

func isCandidate(idx []int32, j int) bool {
	for _, r := range idx {
		if int(r) == j {
			return true
		}
	}
	return false
}
