//go:build !purego

package cpu

import "unsafe"

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

// blockRows wraps a rows kernel over 32-element blocks of blockBytes.
func blockRows(kern func(w *byte, q *int8, d *float32, nb, nrows int, out *float32), blockBytes int) func([]byte, q8Blocks, []float32) {
	return func(w []byte, x q8Blocks, out []float32) {
		nb := len(x.d)
		if nb == 0 || len(out) == 0 {
			clear(out)
			return
		}
		_ = w[len(out)*nb*blockBytes-1]
		_ = x.q[nb*32-1]
		kern(unsafe.SliceData(w), unsafe.SliceData(x.q), unsafe.SliceData(x.d), nb, len(out), unsafe.SliceData(out))
	}
}

// superBlockRows wraps a rows kernel over 256-element super-blocks of
// blockBytes, which also reads the activation sums (16 a super-block).
func superBlockRows(kern func(w *byte, q *int8, d *float32, bsum *int16, nb, nrows int, out *float32), blockBytes int) func([]byte, q8Blocks, []float32) {
	return func(w []byte, x q8Blocks, out []float32) {
		nb := len(x.d)
		if nb == 0 || len(out) == 0 {
			clear(out)
			return
		}
		_ = w[len(out)*nb*blockBytes-1]
		_ = x.q[nb*256-1]
		_ = x.sum[nb*16-1]
		kern(unsafe.SliceData(w), unsafe.SliceData(x.q), unsafe.SliceData(x.d), unsafe.SliceData(x.sum), nb, len(out), unsafe.SliceData(out))
	}
}
