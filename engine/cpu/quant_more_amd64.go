//go:build !purego

package cpu

// The AVX2 kernels of the less common GGUF block types (quant_more_amd64.s):
// Q4_1, Q5_0, Q5_1 and IQ4_NL on Q8_0-form activations, Q2_K and Q3_K on
// Q8_K-form ones. Small models and llama-quantize's fallbacks mix them
// into Q4_K_M/Q5_K_M files, and Q2_K/Q3_K files are what fits the
// smallest boards; the portable kernels run them 15–30× slower.

//go:noescape
func rowsQ4_1AVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

//go:noescape
func rowsQ5_0AVX2(w *byte, q *int8, d *float32, nb int, nrows int, out *float32)

//go:noescape
func rowsQ5_1AVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

//go:noescape
func rowsIQ4NLAVX2(w *byte, q *int8, d *float32, nb int, nrows int, out *float32)

//go:noescape
func rowsQ2KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

//go:noescape
func rowsQ3KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

// useQuantAVX2More puts the AVX2 kernels of Q4_1, Q5_0, Q5_1, IQ4_NL,
// Q2_K and Q3_K into k (useQuantAVX2 calls it).
func useQuantAVX2More(k *kernels) {
	k.quant[typeQ4_1].rows = blockSumRows(rowsQ4_1AVX2, 20)
	k.quant[typeQ5_0].rows = blockRows(rowsQ5_0AVX2, 22)
	k.quant[typeQ5_1].rows = blockSumRows(rowsQ5_1AVX2, 24)
	k.quant[typeIQ4NL].rows = blockRows(rowsIQ4NLAVX2, 18)
	k.quant[typeQ2K].rows = superBlockRows(rowsQ2KAVX2, 84)
	k.quant[typeQ3K].rows = superBlockRows(rowsQ3KAVX2, 110)
}

// blockSumRows is blockRows for the types with a min (Q4_1, Q5_1), whose
// kernels also read the activation sums (one a block: the min meets Σq).
func blockSumRows(kern rowsKernel, blockBytes int) func([]byte, q8Blocks, []float32) {
	return blockKernelRows(kern, blockBytes, 32, 1)
}
