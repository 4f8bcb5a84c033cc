//go:build !purego

package cpu

//go:noescape
func rowsQ8_0AVX2(w *byte, q *int8, d *float32, nb int, nrows int, out *float32)

//go:noescape
func rowsQ4_0AVX2(w *byte, q *int8, d *float32, nb int, nrows int, out *float32)

//go:noescape
func rowsQ4KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

//go:noescape
func rowsQ5KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

//go:noescape
func rowsQ6KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

// useQuantAVX2 puts the AVX2 block-type kernels into k: Q8_0, Q4_0, Q4_K,
// Q5_K and Q6_K (the types of the Q8_0, Q4_0, Q4_K_M and Q5_K_M files
// people run), and through useQuantAVX2More the other six.
func useQuantAVX2(k *kernels) {
	k.quant[typeQ8_0].rows = blockRows(rowsQ8_0AVX2, 34)
	k.quant[typeQ4_0].rows = blockRows(rowsQ4_0AVX2, 18)
	k.quant[typeQ4K].rows = superBlockRows(rowsQ4KAVX2, 144)
	k.quant[typeQ5K].rows = superBlockRows(rowsQ5KAVX2, 176)
	k.quant[typeQ6K].rows = superBlockRows(rowsQ6KAVX2, 210)
	useQuantAVX2More(k)
}

// blockRows wraps a kernel of a 32-element block type without sums
// (Q8_0, Q4_0, Q5_0, IQ4_NL).
func blockRows(kern func(w *byte, q *int8, d *float32, nb, nrows int, out *float32), blockBytes int) func([]byte, q8Blocks, []float32) {
	return blockKernelRows(func(w *byte, q *int8, d *float32, _ *int16, nb, nrows int, out *float32) {
		kern(w, q, d, nb, nrows, out)
	}, blockBytes, 32, 0)
}

// superBlockRows wraps a kernel over 256-element super-blocks, which also
// reads the activation sums (16 a super-block).
func superBlockRows(kern rowsKernel, blockBytes int) func([]byte, q8Blocks, []float32) {
	return blockKernelRows(kern, blockBytes, 256, 16)
}
