package cpu

import (
	"encoding/binary"
	"math"

	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/half"
)

// quantRowQ4K writes x (a multiple of 256 values) as Q4_K blocks by
// format/gguf's rule (quantQ45K: each 32's range [min(lo, 0), hi] in 15
// steps, the steps and mins as 6-bit levels of the super-block's
// largest), without its per-element work: each sub-block's step and min
// are computed once, not per element, and nothing is allocated. The
// float32 operations are the same, in the same expressions, so the bytes
// are gguf.Quantize's (TestQuantRowQ4KIsGGUFs, on amd64 and arm64); the
// rule's one home stays format/gguf. A head is quantized at every load:
// this takes a BitNet-2B row in ~9.4 µs on one core against 28–40 µs
// (BenchmarkQuantRowQ4K), ~1.2 s of CPU for the whole head.
func quantRowQ4K(x []float32, dst []byte) {
	for sb := range len(x) / 256 {
		xs, b := x[256*sb:256*sb+256], dst[144*sb:144*sb+144]
		var scale, mins [8]float32
		for j := range 8 {
			lo, hi := xs[32*j], xs[32*j]
			for _, v := range xs[32*j+1 : 32*j+32] {
				lo, hi = min(lo, v), max(hi, v)
			}
			lo = min(lo, 0)
			scale[j], mins[j] = (hi-lo)/float32(15), -lo
		}
		ls, d := kLevels(scale[:], 63)
		lm, dmin := kLevels(mins[:], 63)
		binary.LittleEndian.PutUint16(b, d)
		binary.LittleEndian.PutUint16(b[2:], dmin)
		s := b[4:16]
		clear(s)
		for j := range 8 {
			if j < 4 {
				s[j], s[j+4] = ls[j], lm[j]
			} else {
				s[j+4] = ls[j]&15 | lm[j]&15<<4
				s[j-4] |= ls[j] >> 4 << 6
				s[j] |= lm[j] >> 4 << 6
			}
		}
		qs := b[16:144]
		clear(qs)
		df, dminf := half.F16ToF32(d), half.F16ToF32(dmin)
		for j := range 8 {
			sc, m := gguf.Q4KScaleMin(s, j)
			dd := df * float32(sc)
			out, shift := qs[32*(j/2):32*(j/2)+32], 4*(j%2)
			for l, v := range xs[32*j : 32*j+32] {
				q := 0
				if dd != 0 {
					q = max(0, min(15, int(math.RoundToEven(float64((v+dminf*float32(m))/dd)))))
				}
				out[l] |= uint8(q&15) << shift
			}
		}
	}
}

// The 2- and 3-bit heads' quantizers. gguf.Quantize's Q2_K and Q3_K
// rules map each 16-element sub-block's range onto the codes (min…max in
// 3 steps; the largest magnitude at −4), as a file writer with no error
// search may; at 4 and 3 levels that leaves a head's logits so far off
// that the float argmax falls to rank 46 of a Q2_K sketch on the
// fixtures. These choose each sub-block's step (and Q2_K's min) as the
// least-squares fit over a grid of trial steps, as llama-quantize's
// searches do, then quantize the steps to the super-block's levels as
// gguf's rule does and pick each code against the stored step: the same
// block layouts (gguf.Dequantize reads them; TestHeadQuantizersFit
// checks both against gguf's rule), with less error.

// quantRowQ2K writes x (a multiple of 256 values) as Q2_K blocks:
// x ≈ d·sc·q − dmin·m per 16, q in 0…3, sc and m 4-bit levels.
func quantRowQ2K(x []float32, dst []byte) {
	for sb := range len(x) / 256 {
		xs := x[256*sb : 256*sb+256]
		var scale, mins [16]float32
		for j := range 16 {
			scale[j], mins[j] = fitMinStep(xs[16*j:16*j+16], 3)
		}
		gguf.PackQ2K(xs, &scale, &mins, dst[84*sb:84*sb+84])
	}
}

// fitMinStep is the step s ≥ 0 and min m ≥ 0 of x (16 values) ≈
// s·q − m, q in 0…top, of least squared error over trial steps around
// (max−min)/top: each trial's codes, then s and m refitted to those
// codes by least squares (m held at 0 where the fit wants a positive
// offset), its error the fit's residual. The trial at (max−min)/top gives
// gguf's codes, so the fit is never worse than gguf's rule before the
// levels are rounded.
func fitMinStep(x []float32, top int) (step, minus float32) {
	x = x[:16]
	lo, hi := x[0], x[0]
	var sx, sxx float64
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
		sx, sxx = sx+float64(v), sxx+float64(v)*float64(v)
	}
	lo = min(lo, 0)
	if hi == lo {
		return 0, -lo
	}
	bestS, bestM, bestErr := (hi-lo)/float32(top), -lo, math.Inf(1)
	n := float64(len(x))
	var shifted [16]float32 // x − lo ≥ 0
	for i, v := range x {
		shifted[i] = v - lo
	}
	for is := range 8 {
		iscale := (float32(top) - 0.4 + 0.2*float32(is)) / (hi - lo)
		// Four sums in registers: a float32 add's latency, not the
		// loop, would set the pace of one.
		var li, l2i int
		var lx0, lx1, lx2, lx3 float32
		for i := 0; i < 16; i += 4 {
			h, v := shifted[i:i+4:i+4], x[i:i+4:i+4]
			// h ≥ 0: the truncation rounds.
			l0, l1 := min(top, int(iscale*h[0]+0.5)), min(top, int(iscale*h[1]+0.5))
			l2, l3 := min(top, int(iscale*h[2]+0.5)), min(top, int(iscale*h[3]+0.5))
			li += l0 + l1 + l2 + l3
			l2i += l0*l0 + l1*l1 + l2*l2 + l3*l3
			lx0, lx1 = lx0+float32(l0)*v[0], lx1+float32(l1)*v[1]
			lx2, lx3 = lx2+float32(l2)*v[2], lx3+float32(l3)*v[3]
		}
		sl, sl2, slx := float64(li), float64(l2i), float64(lx0+lx1+lx2+lx3)
		det := n*sl2 - sl*sl
		if det <= 0 {
			continue
		}
		s := (n*slx - sl*sx) / det
		off := (sx - s*sl) / n // x ≈ s·l + off
		if off > 0 {
			off, s = 0, slx/sl2
		}
		if s <= 0 {
			continue
		}
		// Residual of the fit: Σx² − s·Σlx − off·Σx at the optimum.
		if e := sxx - s*slx - off*sx; e < bestErr {
			bestErr, bestS, bestM = e, float32(s), float32(-off)
		}
	}
	return bestS, bestM
}

// quantRowQ3K writes x (a multiple of 256 values) as Q3_K blocks:
// x ≈ d·(sc−32)·q per 16, q in −4…3, sc a 6-bit level.
func quantRowQ3K(x []float32, dst []byte) {
	for sb := range len(x) / 256 {
		xs := x[256*sb : 256*sb+256]
		var scale [16]float32
		for j := range 16 {
			scale[j] = fitStep(xs[16*j : 16*j+16])
		}
		gguf.PackQ3K(xs, &scale, dst[110*sb:110*sb+110])
	}
}

// fitStep is the step s of x (16 values) ≈ s·q, q in −4…3, of least
// squared error over trial steps around gguf's (the largest magnitude at
// −4): each trial's codes, then s refitted to them by least squares, its
// error the fit's residual Σx² − (Σqx)²/Σq². The trial at gguf's step
// gives gguf's codes, so the fit is never worse than gguf's rule before
// the levels are rounded.
func fitStep(x []float32) float32 {
	x = x[:16]
	var mx, amax float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	if amax == 0 {
		return 0
	}
	best, bestGain := mx/-4, -1.0
	for i := range 8 {
		inv := -4 / mx / (0.72 + 0.04*float32(i))
		// Four sums in registers, as in fitMinStep. v·inv+4.5 < 0
		// truncates to 0 too.
		var qq int
		var qx0, qx1, qx2, qx3 float32
		for i := 0; i < 16; i += 4 {
			v := x[i : i+4 : i+4]
			q0, q1 := max(0, min(7, int(v[0]*inv+4.5)))-4, max(0, min(7, int(v[1]*inv+4.5)))-4
			q2, q3 := max(0, min(7, int(v[2]*inv+4.5)))-4, max(0, min(7, int(v[3]*inv+4.5)))-4
			qq += q0*q0 + q1*q1 + q2*q2 + q3*q3
			qx0, qx1 = qx0+float32(q0)*v[0], qx1+float32(q1)*v[1]
			qx2, qx3 = qx2+float32(q2)*v[2], qx3+float32(q3)*v[3]
		}
		sq, sqq := float64(qx0+qx1+qx2+qx3), float64(qq)
		// The residual is Σx² − sq²/sqq: the largest sq²/sqq wins.
		if sqq > 0 && sq*sq/sqq > bestGain {
			best, bestGain = float32(sq/sqq), sq*sq/sqq
		}
	}
	return best
}

// kLevels is format/gguf's superScales for the K-quants' 8 or 16
// sub-blocks: levels 0…top of the largest, and the fp16 step.
func kLevels(s []float32, top int) ([16]uint8, uint16) {
	var m float32
	for _, v := range s {
		m = max(m, v)
	}
	is := float32(0)
	if m > 0 {
		is = float32(top) / m
	}
	var out [16]uint8
	for i, v := range s {
		out[i] = uint8(min(top, int(math.RoundToEven(float64(is*v)))))
	}
	return out, half.F32ToF16(m / float32(top))
}
