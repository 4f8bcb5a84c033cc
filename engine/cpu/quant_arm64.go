//go:build !purego

package cpu

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
var quantARM64 = [numQuantTypes]struct{ sdot, neon rowsKernel }{
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
		k.quant[qt].rows = blockKernelRows(kern, int(q.gguf.TypeSize()), q.form.blockLen(), q.form.blockLen()/q.form.sumLen())
	}
}
