//go:build !purego

package cpu

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
func siluMulAVX2(x *float32, y *float32, n int)

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

// useGlueAVX2 puts the AVX2 glue kernels into k; addSIMD calls it on AVX2
// CPUs where the AVX-512 ones are not used.
func useGlueAVX2(k *kernels) {
	k.absMax = absMaxGlueAVX2
	k.quantBlocks = quantBlocksGlueAVX2
	k.relu2Mul = relu2MulGlueAVX2
	k.sumSquares = sumSquaresGlueAVX2
	k.scaleMul = scaleMulGlueAVX2
	k.maxF32 = maxF32GlueAVX2
	k.expSubSum = expSubSumGlueAVX2
	k.attnScores = attnScoresGlueAVX2
	k.attnMix = attnMixGlueAVX2
	k.attnScores4 = attnScores4GlueAVX2
	k.attnMix4 = attnMix4GlueAVX2
}

// The wrappers (simdwrap.go), named so the tests can call them directly.
// absMax and max are exact (VMAXPS picks one of its inputs; NaN-free
// input); quantBlocks, relu2Mul and scaleMul (dst may be x) are bit for
// bit the portable code; sumSquares agrees with it to float64 rounding;
// expSubSum is Cephes' float32 expf (≈1 ulp) over 8 floats at a time,
// float64 exp on the rest.

func absMaxGlueAVX2(x []float32) float32 { return absMaxWith(absMaxAVX2, 8, x) }
func maxF32GlueAVX2(x []float32) float32 { return maxF32With(maxAVX2, 8, x) }
func sumSquaresGlueAVX2(x []float32) float64 {
	return sumSquaresWith(sumSquaresAVX2, 8, x)
}
func expSubSumGlueAVX2(x []float32, mx float32) float32 {
	return expSubSumWith(expSubSumAVX2, 8, x, mx)
}
func scaleMulGlueAVX2(dst, x, w []float32, inv float32) {
	scaleMulWith(scaleMulAVX2, 8, dst, x, w, inv)
}
func relu2MulGlueAVX2(g, u []float32) { relu2MulWith(relu2MulAVX2, 8, g, u) }
func siluMulGlueAVX2(g, u []float32)  { siluMulWith(siluMulAVX2, 8, g, u) }
func quantBlocksGlueAVX2(x []float32, inv float32, q, qp []int8, bsum []int32) {
	quantBlocksWith(quantBlocksAVX2, x, inv, q, qp, bsum)
}
func attnScoresGlueAVX2(q, k []float32, stride, n int, scale float32, out []float32) {
	attnScoresWith(attnScores128AVX2, q, k, stride, n, scale, out)
}
func attnMixGlueAVX2(w, v []float32, stride, n int, o []float32) {
	attnMixWith(attnMix128AVX2, w, v, stride, n, o)
}
func attnScores4GlueAVX2(q, k []float32, stride, n int, scale float32, out []float32, ldo int) {
	attnScores4With(attnScores4x128AVX2, q, k, stride, n, scale, out, ldo)
}
func attnMix4GlueAVX2(w []float32, ldw int, v []float32, stride, n int, o []float32) {
	attnMix4With(attnMix4x128AVX2, w, ldw, v, stride, n, o)
}
