package quant

import (
	"fmt"
	"math"
)

// Ternarize modes (--ternarize).
const (
	// TernarizeAuto keeps rows that are already ternary ({−α, 0, +α}) with
	// their own α and applies absmean to the others.
	TernarizeAuto = "auto"
	// TernarizeAbsmean applies BitNet absmean to every row.
	TernarizeAbsmean = "absmean"
	// TernarizeNone hands the floats to the output format's own quantizer
	// (as `llama-quantize … TQ2_0` does).
	TernarizeNone = "none"
)

// AbsmeanFloor is BitNet's lower bound on the per-tensor scale.
const AbsmeanFloor = 1e-5

// RowTernary reports whether every value of w is 0, +α or −α for a single
// α ≥ 0, and returns α (0 for an all-zero row).
func RowTernary(w []float32) (alpha float32, ok bool) {
	alpha, _, ok = rowStats(w)
	return alpha, ok
}

// rowStats is RowTernary plus Σ|w| in one pass (the scan's inner loop).
func rowStats(w []float32) (alpha float32, sumAbs float32, ok bool) {
	i := 0
	for ; i < len(w); i++ {
		a := abs32(w[i])
		sumAbs += a
		if a == 0 || a == alpha {
			continue
		}
		if alpha != 0 {
			break // not ternary; finish the sum without the checks
		}
		alpha = a
	}
	if i == len(w) {
		return alpha, sumAbs, true
	}
	for i++; i < len(w); i++ {
		sumAbs += abs32(w[i])
	}
	return 0, sumAbs, false
}

// AbsmeanScale is BitNet's per-tensor scale s = max(mean|W|, 1e-5), from
// the sum of |w| over n weights.
func AbsmeanScale(sumAbs float64, n int64) float32 {
	if n == 0 {
		return AbsmeanFloor
	}
	return float32(max(sumAbs/float64(n), AbsmeanFloor))
}

// TernarizeAbsmeanRow writes clamp(round(w·(1/s)), −1, 1) into q, as
// BitNet's weight_quant computes it (HF and llama.cpp multiply by the
// float32 reciprocal). After the clamp only which side of ±0.5 the product
// falls on matters: torch.round is half to even, so exactly ±0.5 gives 0.
// The selects compile to conditional moves; random signs would defeat a
// branch predictor.
func TernarizeAbsmeanRow(q []int8, w []float32, s float32) {
	inv := 1 / s
	for i, v := range w {
		x := v * inv
		var pos, neg int8
		if x > 0.5 {
			pos = 1
		}
		if x < -0.5 {
			neg = 1
		}
		q[i] = pos - neg
	}
}

// TernaryRow writes sign(w) into q (w already ternary).
func TernaryRow(q []int8, w []float32) {
	for i, v := range w {
		switch {
		case v > 0:
			q[i] = 1
		case v < 0:
			q[i] = -1
		default:
			q[i] = 0
		}
	}
}

// checkFinite returns the index of the first NaN or Inf, or -1.
func checkFinite(w []float32) int {
	for i, v := range w {
		if v != v || v > math.MaxFloat32 || v < -math.MaxFloat32 { // NaN, ±Inf
			return i
		}
	}
	return -1
}

// plan is how one tensor's rows become ternary.
type plan struct {
	mode   string
	tern   []bool    // row is already ternary
	alpha  []float32 // its α
	s      float32   // absmean scale for the other rows
	nTern  int       // rows kept as they were
	nRows  int
	sumAbs float64
}

// rowCodes ternarizes row r (values w) into q and returns its scale.
func (p *plan) rowCodes(r int, w []float32, q []int8) float32 {
	if p.mode == TernarizeAuto && p.tern[r] {
		TernaryRow(q, w)
		return p.alpha[r]
	}
	TernarizeAbsmeanRow(q, w, p.s)
	return p.s
}

func (p *plan) describe() string {
	switch {
	case p.mode == TernarizeAuto && p.nTern == p.nRows:
		return "ternary (lossless)"
	case p.mode == TernarizeAuto && p.nTern > 0:
		return fmt.Sprintf("%d ternary rows kept, %d absmean (s=%g)", p.nTern, p.nRows-p.nTern, p.s)
	}
	return fmt.Sprintf("absmean (s=%g)", p.s)
}

func abs32(v float32) float32 {
	return math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
}
