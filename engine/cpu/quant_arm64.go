//go:build !purego

package cpu

import "unsafe"

// quantRowsKernel is the signature of every arm64 block-type kernel
// (quant_arm64.s): nrows ≥ 1 consecutive rows of nb ≥ 1 blocks against
// one activation row (codes q, scales d, sums sum), one float32 a row.
type quantRowsKernel func(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ8_0SDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ8_0NEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ4_0SDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ4_0NEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ4_1SDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ4_1NEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ5_0SDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ5_0NEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ5_1SDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ5_1NEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsIQ4NLSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsIQ4NLNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ2KSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ2KNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ3KSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ3KNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ4KSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ4KNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ5KSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ5KNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ6KSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

//go:noescape
func rowsQ6KNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

// quantARM64 lists each block type's two kernels: with the dot-product
// extension (SDOT) and without (ARMv8.0's widening multiplies).
var quantARM64 = [numQuantTypes]struct{ sdot, neon quantRowsKernel }{
	typeQ8_0:  {rowsQ8_0SDOT, rowsQ8_0NEON},
	typeQ4_0:  {rowsQ4_0SDOT, rowsQ4_0NEON},
	typeQ4_1:  {rowsQ4_1SDOT, rowsQ4_1NEON},
	typeQ5_0:  {rowsQ5_0SDOT, rowsQ5_0NEON},
	typeQ5_1:  {rowsQ5_1SDOT, rowsQ5_1NEON},
	typeIQ4NL: {rowsIQ4NLSDOT, rowsIQ4NLNEON},
	typeQ2K:   {rowsQ2KSDOT, rowsQ2KNEON},
	typeQ3K:   {rowsQ3KSDOT, rowsQ3KNEON},
	typeQ4K:   {rowsQ4KSDOT, rowsQ4KNEON},
	typeQ5K:   {rowsQ5KSDOT, rowsQ5KNEON},
	typeQ6K:   {rowsQ6KSDOT, rowsQ6KNEON},
}

// useQuantNEON puts the NEON block-type kernels into k, the SDOT ones
// when sdot: every block type has both, and Q8_0, Q4_K and Q6_K also the
// four-token prefill ones (quant_tile_arm64.go).
func useQuantNEON(k *kernels, sdot bool) {
	useQuantTilesNEON(k, sdot)
	for qt, v := range quantARM64 {
		kern := v.neon
		if sdot {
			kern = v.sdot
		}
		q := quantTypes[qt]
		k.quant[qt].rows = quantRowsARM64(kern, int(q.gguf.TypeSize()), q.form)
	}
}

// quantRowsARM64 wraps kern, whose blocks are blockBytes long and read
// activations in form f, as a kernel table rows entry.
func quantRowsARM64(kern quantRowsKernel, blockBytes int, f blockForm) func([]byte, q8Blocks, []float32) {
	bl, sums := f.blockLen(), f.blockLen()/f.sumLen()
	return func(w []byte, x q8Blocks, out []float32) {
		nb := len(x.d)
		if nb == 0 || len(out) == 0 {
			clear(out)
			return
		}
		_ = w[len(out)*nb*blockBytes-1]
		_ = x.q[nb*bl-1]
		_ = x.sum[nb*sums-1]
		kern(unsafe.SliceData(w), unsafe.SliceData(x.q), unsafe.SliceData(x.d), unsafe.SliceData(x.sum), nb, len(out), unsafe.SliceData(out))
	}
}
