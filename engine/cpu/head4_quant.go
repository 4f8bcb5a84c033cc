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
		ls, d := q4kLevels(&scale)
		lm, dmin := q4kLevels(&mins)
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

// q4kLevels is format/gguf's superScales for Q4_K's eight sub-blocks:
// levels 0…63 of the largest, and the fp16 step.
func q4kLevels(s *[8]float32) ([8]uint8, uint16) {
	var m float32
	for _, v := range s {
		m = max(m, v)
	}
	is := float32(0)
	if m > 0 {
		is = float32(63) / m
	}
	var out [8]uint8
	for i, v := range s {
		out[i] = uint8(min(63, int(math.RoundToEven(float64(is*v)))))
	}
	return out, half.F32ToF16(m / float32(63))
}
