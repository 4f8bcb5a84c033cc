//go:build !purego

package cpu

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/edgectl/edgectl/format/half"
)

//go:noescape
func i2RowsSDOT(rows *byte, q *int8, nb, n int, total int32, xs float32, scale *float32, out unsafe.Pointer)

//go:noescape
func i2Dot4SDOT(row *byte, q *int8, k, nb int, out *int32)

//go:noescape
func tq2BlockSumsSDOT(row *byte, q *int8, nb int, out *int32)

//go:noescape
func tq2BlockSumsNEON(row *byte, q *int8, nb int, out *int32)

//go:noescape
func q8DotSDOT(w, x *int8, n int) int32

//go:noescape
func i2RowsNEON(rows *byte, q *int8, nb, n int, total int32, xs float32, scale *float32, out unsafe.Pointer)

//go:noescape
func i2Dot4NEON(row *byte, q *int8, k, nb int, out *int32)

//go:noescape
func q8DotNEON(w, x *int8, n int) int32

//go:noescape
func dotF32NEON(a, b *float32, n int) float32

//go:noescape
func axpyF32NEON(a float32, x, y *float32, n int)

//go:noescape
func dotF16NEON(w *byte, x *float32, n int) float32

//go:noescape
func readSumNEON(p *byte, n int) uint64

//go:noescape
func absMaxNEON(x *float32, n int) float32

//go:noescape
func quantBlocksNEON(x *float32, nb int, inv float32, q *int8, bsum *int32)

//go:noescape
func attnScores128NEON(q, k *float32, stride, n int, scale float32, out *float32)

//go:noescape
func attnMix128NEON(w, v *float32, stride, n int, o *float32)

//go:noescape
func q8Rows4SDOT(w, x *int8, stride, n, groups int, out *int32)

//go:noescape
func q8Rows4NEON(w, x *int8, stride, n, groups int, out *int32)

//go:noescape
func maxNEON(x *float32, n int) float32

//go:noescape
func expSubSumNEON(x *float32, n int, mx float32) float32

//go:noescape
func sumSquaresNEON(x *float32, n int) float64

//go:noescape
func scaleMulNEON(dst, x, w *float32, n int, inv float32)

//go:noescape
func neonProbe(op int, d, n, m *[16]byte)

// detectFeatures reports the CPU's extensions the arm64 kernels use.
// ASIMD is part of every arm64 CPU Go runs on (the runtime itself uses
// it); the dot-product extension (SDOT: Cortex-A55/A76 and later, Apple)
// is detected. Settings turn either off (EDGECTL_PUREGO,
// EDGECTL_NO_DOTPROD: the ARMv8.0 kernels a Cortex-A53 runs).
func detectFeatures() cpuFeatures {
	return cpuFeatures{neon: true, dotProd: cpu.ARM64.HasASIMDDP}
}

// i2MaxBlocksSDOT bounds the row length of the SDOT I2 kernel: its ×4 and
// ×16 accumulators hold exact multiples of the partial sums only while
// they cannot wrap (16·|Σ| < 2^31 with |Σ| ≤ 3·128·K/4 needs K < 1.39M;
// 4096 blocks is K ≤ 1M). Longer rows take the ARMv8.0 kernel, which is
// exact modulo 2^32 like the Go one.
const i2MaxBlocksSDOT = 4096

// i2RowsARM64 is the I2 rows kernel for rows of nb blocks: the SDOT one
// when sdot and the rows are short enough for it, else ARMv8.0's.
func i2RowsARM64(sdot bool, nb int) func(*byte, *int8, int, int, int32, float32, *float32, unsafe.Pointer) {
	if sdot && nb <= i2MaxBlocksSDOT {
		return i2RowsSDOT
	}
	return i2RowsNEON
}

// addSIMD puts the NEON kernels into k (newKernels): the integer ones with
// or without SDOT, and the float and glue ones.
func addSIMD(k *kernels, f cpuFeatures) {
	if !f.neon {
		return
	}
	sdot := f.dotProd
	i2 := &k.tern[typeI2]
	dot4K, q8K, tq2K, q8r4K := i2Dot4NEON, q8DotNEON, tq2BlockSumsNEON, q8Rows4NEON
	k.name = "neon"
	if sdot {
		dot4K, q8K, tq2K, q8r4K = i2Dot4SDOT, q8DotSDOT, tq2BlockSumsSDOT, q8Rows4SDOT
		k.name = "neon-dotprod"
	}
	i2.rows = func(rows []byte, q []int8, total int32, xs float32, scale, out []float32) {
		nb := len(q) / 256
		if len(out) == 0 {
			return
		}
		_ = scale[len(out)-1]
		if nb == 0 {
			for i := range out {
				out[i] = float32(-total) * scale[i] * xs
			}
			return
		}
		_ = rows[len(out)*nb*i2Block-1]
		i2RowsARM64(sdot, nb)(unsafe.SliceData(rows), unsafe.SliceData(q), nb, len(out), total, xs, unsafe.SliceData(scale), unsafe.Pointer(unsafe.SliceData(out)))
	}
	i2.dot = func(row []byte, q []int8, total int32) int32 {
		nb := len(q) / 256
		if nb == 0 {
			return -total
		}
		_ = row[nb*i2Block-1]
		var s int32
		i2RowsARM64(sdot, nb)(unsafe.SliceData(row), unsafe.SliceData(q), nb, 1, 0, 0, nil, unsafe.Pointer(&s))
		return s - total
	}
	i2.dot4 = func(row []byte, q []int8, kk int, totals []int32, out *[4]int32) {
		nb := kk / 256
		_ = totals[3]
		if nb == 0 {
			for t := range 4 {
				out[t] = -totals[t]
			}
			return
		}
		_ = row[nb*i2Block-1]
		_ = q[3*kk+nb*256-1]
		d4 := dot4K
		if nb > i2MaxBlocksSDOT {
			d4 = i2Dot4NEON
		}
		d4(unsafe.SliceData(row), unsafe.SliceData(q), kk, nb, &out[0])
		for t := range 4 {
			out[t] -= totals[t]
		}
	}
	q8Dot := func(w, x []int8) int32 {
		x = x[:len(w)]
		n := len(w) &^ 15
		var s int32
		if n > 0 {
			s = q8K(unsafe.SliceData(w), unsafe.SliceData(x), n)
		}
		return s + q8DotGo(w[n:], x[n:])
	}
	k.q8.dot = q8Dot
	// The LM head at decode: groups of four rows share each activation
	// load in the kernel (k&^15 columns); the last k%16 columns and the
	// last len(out)%4 rows go through q8DotGo and q8Dot.
	k.q8.rows = func(w []int8, kk int, x []int8, out []int32) {
		nr := len(out)
		if nr == 0 {
			return
		}
		if kk == 0 {
			clear(out)
			return
		}
		_ = w[nr*kk-1]
		x = x[:kk]
		n := kk &^ 15
		g := 0
		if n > 0 {
			g = nr / 4
		}
		if g > 0 {
			q8r4K(unsafe.SliceData(w), unsafe.SliceData(x), kk, n, g, unsafe.SliceData(out))
			if n < kk {
				for r := range 4 * g {
					out[r] += q8DotGo(w[r*kk+n:(r+1)*kk], x[n:])
				}
			}
		}
		for r := 4 * g; r < nr; r++ {
			out[r] = q8Dot(w[r*kk:(r+1)*kk], x)
		}
	}
	// TQ2_0: exact per-block integer sums from SIMD code, combined with
	// the block scales in the same order (and the same Go expression) as
	// tq2DotGo.
	k.tern[typeTQ2].blockDot = tq2DotFromBlockSums(tq2K)
	useQuantNEON(k, sdot) // the GGUF block types (quant_arm64.go)
	useBase3(k, f)        // base3_arm64.go: the B3 rows
	useSherry(k, f)
	k.maxF32 = maxF32ARM64
	k.expSubSum = expSubSumARM64
	k.siluMul = siluMulByExp(expSubSumARM64)
	k.sumSquares = sumSquaresARM64
	k.scaleMul = scaleMulARM64
	k.dotF32 = dotF32ARM64
	k.axpyF32 = axpyF32ARM64
	k.dotF16 = dotF16ARM64
	k.readSum = readSumARM64
	useGemm(k, f)
	k.absMax = absMaxARM64
	k.quantBlocks = quantBlocksARM64
	k.attnScores = attnScoresARM64
	k.attnMix = attnMixARM64
}

// attnScoresARM64 and attnMixARM64 are one head of attention for headDim
// 128 (the only size forward.go calls them for), to rounding as dotF32Go
// and axpyF32Go give.
func attnScoresARM64(q, k []float32, stride, n int, scale float32, out []float32) {
	attnScoresWith(attnScores128NEON, q, k, stride, n, scale, out)
}

func attnMixARM64(w, v []float32, stride, n int, o []float32) {
	attnMixWith(attnMix128NEON, w, v, stride, n, o)
}

// dotF32ARM64 agrees with dotF32Go to rounding: FMA and a different
// summation order.
func dotF32ARM64(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 15
	var s float32
	if n > 0 {
		s = dotF32NEON(unsafe.SliceData(a), unsafe.SliceData(b), n)
	}
	for i := n; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

func axpyF32ARM64(a float32, x, y []float32) {
	x = x[:len(y)]
	n := len(y) &^ 15
	if n > 0 {
		axpyF32NEON(a, unsafe.SliceData(x), unsafe.SliceData(y), n)
	}
	axpyF32Go(a, x[n:], y[n:])
}

func dotF16ARM64(w []byte, x []float32) float32 {
	k := len(w) / 2
	x = x[:k]
	n := k &^ 15
	var s float32
	if n > 0 {
		s = dotF16NEON(unsafe.SliceData(w), unsafe.SliceData(x), n)
	}
	for i := n; i < k; i++ {
		s += half.F16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
	}
	return s
}

func readSumARM64(b []byte) uint64 {
	n := len(b) &^ 127
	var s uint64
	if n > 0 {
		s = readSumNEON(unsafe.SliceData(b), n)
	}
	return s + readSumGo(b[n:])
}

func absMaxARM64(x []float32) float32 {
	return absMaxWith(absMaxNEON, 16, x)
}

func quantBlocksARM64(x []float32, inv float32, q, qp []int8, bsum []int32) {
	quantBlocksWith(quantBlocksNEON, x, inv, q, qp, bsum)
}

// maxF32ARM64 is exact: FMAX picks one of its inputs (NaN-free input; of
// −0 and +0 it may return the other one, which compare equal).
func maxF32ARM64(x []float32) float32 {
	return maxF32With(maxNEON, 16, x)
}

// expSubSumARM64 is Cephes' float32 expf (≈1 ulp) over 16 floats at a
// time, float64 exp on the rest. x−mx is clamped to [−87.34, 88] in the
// kernel: results below e^−87.34 (1.2e−38) come out as 1.2e−38, and
// nothing is above e^0 when mx is the max, as softmax passes it.
func expSubSumARM64(x []float32, mx float32) float32 {
	return expSubSumWith(expSubSumNEON, 16, x, mx)
}

// sumSquaresARM64 agrees with sumSquaresGo to float64 rounding (each
// square is exact in float64; the sums run in another order).
func sumSquaresARM64(x []float32) float64 {
	return sumSquaresWith(sumSquaresNEON, 16, x)
}

// scaleMulARM64 is bit for bit scaleMulGo; dst may be x.
func scaleMulARM64(dst, x, w []float32, inv float32) {
	scaleMulWith(scaleMulNEON, 16, dst, x, w, inv)
}
