//go:build !purego

package cpu

import (
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// AVX2+FMA glue kernels (glue_amd64.s) for CPUs without AVX-512: the
// passes between the products that otherwise run in portable Go.

//go:noescape
func absMaxAVX2(x *float32, n int) float32

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func relu2MulAVX2(x *float32, y *float32, n int)

//go:noescape
func sumSquaresAVX2(x *float32, n int) float64

//go:noescape
func scaleMulAVX2(dst, x, w *float32, n int, inv float32)

//go:noescape
func expSubSumAVX2(x *float32, n int, mx float32) float32

//go:noescape
func quantBlocksAVX2(x *float32, nb int, inv float32, q *int8, bsum *int32)

//go:noescape
func attnScores128AVX2(q *float32, k *float32, stride int, n int, scale float32, out *float32)

//go:noescape
func attnMix128AVX2(w *float32, v *float32, stride int, n int, o *float32)

//go:noescape
func attnScores4x128AVX2(q *float32, k *float32, stride int, n int, scale float32, out *float32, ldo int)

//go:noescape
func attnMix4x128AVX2(w *float32, ldw int, v *float32, stride int, n int, o *float32)

// Runs after kernels_amd64.go's init (file-name order): installs the AVX2
// glue kernels unless the AVX-512 ones are in use.
func init() {
	if !hasAVX2 || (cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && os.Getenv("EDGECTL_NO_AVX512") != "1") {
		return
	}
	absMax = absMaxGlueAVX2
	quantBlocks = quantBlocksGlueAVX2
	relu2Mul = relu2MulGlueAVX2
	sumSquares = sumSquaresGlueAVX2
	scaleMul = scaleMulGlueAVX2
	maxF32 = maxF32GlueAVX2
	expSubSum = expSubSumGlueAVX2
	attnScores = attnScoresGlueAVX2
	attnMix = attnMixGlueAVX2
	attnScores4 = attnScores4GlueAVX2
	attnMix4 = attnMix4GlueAVX2
}

// absMaxGlueAVX2 is exact (VMAXPS picks one of its inputs).
func absMaxGlueAVX2(x []float32) float32 {
	n := len(x) &^ 7
	var m float32
	if n > 0 {
		m = absMaxAVX2(unsafe.SliceData(x), n)
	}
	return max(m, absMaxGo(x[n:]))
}

// quantBlocksGlueAVX2 is bit for bit quantBlocksGo: the SIMD kernel on the
// full 256-blocks, the portable code on a short last one; qp (only the
// AVX-512 I2 kernels read it) is derived from q afterwards.
func quantBlocksGlueAVX2(x []float32, inv float32, q, qp []int8, bsum []int32) {
	full := min(len(bsum), len(x)/256)
	if full > 0 {
		_ = q[full*256-1]
		quantBlocksAVX2(unsafe.SliceData(x), full, inv, unsafe.SliceData(q), unsafe.SliceData(bsum))
	}
	if full < len(bsum) {
		quantBlocksGo(x[full*256:], inv, q[full*256:], nil, bsum[full:])
	}
	if qp != nil {
		permuteI2(qp, q[:len(x)])
	}
}

// relu2MulGlueAVX2 is bit for bit relu2MulGo.
func relu2MulGlueAVX2(g, u []float32) {
	n := len(g) &^ 7
	if n > 0 {
		_ = u[n-1]
		relu2MulAVX2(unsafe.SliceData(g), unsafe.SliceData(u), n)
	}
	relu2MulGo(g[n:], u[n:len(g)])
}

// sumSquaresGlueAVX2 agrees with sumSquaresGo to float64 rounding.
func sumSquaresGlueAVX2(x []float32) float64 {
	n := len(x) &^ 7
	var s float64
	if n > 0 {
		s = sumSquaresAVX2(unsafe.SliceData(x), n)
	}
	return s + sumSquaresGo(x[n:])
}

// scaleMulGlueAVX2 is bit for bit scaleMulGo; dst may be x.
func scaleMulGlueAVX2(dst, x, w []float32, inv float32) {
	n := len(x) &^ 7
	if n > 0 {
		_ = dst[n-1]
		_ = w[n-1]
		scaleMulAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), unsafe.SliceData(w), n, inv)
	}
	scaleMulGo(dst[n:], x[n:], w[n:], inv)
}

// maxF32GlueAVX2 is exact (NaN-free input).
func maxF32GlueAVX2(x []float32) float32 {
	n := len(x) &^ 7
	if n == 0 {
		return maxF32Go(x)
	}
	return max(maxAVX2(unsafe.SliceData(x), n), maxF32Go(x[n:]))
}

// expSubSumGlueAVX2 is Cephes' float32 expf (≈1 ulp) over 8 floats at a
// time, float64 exp on the rest.
func expSubSumGlueAVX2(x []float32, mx float32) float32 {
	n := len(x) &^ 7
	var s float32
	if n > 0 {
		s = expSubSumAVX2(unsafe.SliceData(x), n, mx)
	}
	return s + expSubSumGo(x[n:], mx)
}

func attnScoresGlueAVX2(q, k []float32, stride, n int, scale float32, out []float32) {
	if n == 0 {
		return
	}
	_ = q[127]
	_ = k[(n-1)*stride+127]
	_ = out[n-1]
	attnScores128AVX2(unsafe.SliceData(q), unsafe.SliceData(k), stride, n, scale, unsafe.SliceData(out))
}

func attnMixGlueAVX2(w, v []float32, stride, n int, o []float32) {
	_ = o[127]
	if n == 0 {
		clear(o[:128])
		return
	}
	_ = w[n-1]
	_ = v[(n-1)*stride+127]
	attnMix128AVX2(unsafe.SliceData(w), unsafe.SliceData(v), stride, n, unsafe.SliceData(o))
}

func attnScores4GlueAVX2(q, k []float32, stride, n int, scale float32, out []float32, ldo int) {
	if n == 0 {
		return
	}
	_ = q[4*128-1]
	_ = k[(n-1)*stride+127]
	_ = out[3*ldo+n-1]
	attnScores4x128AVX2(unsafe.SliceData(q), unsafe.SliceData(k), stride, n, scale, unsafe.SliceData(out), ldo)
}

func attnMix4GlueAVX2(w []float32, ldw int, v []float32, stride, n int, o []float32) {
	_ = o[4*128-1]
	if n == 0 {
		clear(o[:4*128])
		return
	}
	_ = w[3*ldw+n-1]
	_ = v[(n-1)*stride+127]
	attnMix4x128AVX2(unsafe.SliceData(w), ldw, unsafe.SliceData(v), stride, n, unsafe.SliceData(o))
}
