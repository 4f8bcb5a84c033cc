//go:build !purego

package cpu

//go:noescape
func rows4Q8_0SDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)

//go:noescape
func rows4Q8_0NEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)

//go:noescape
func rows4Q4KSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)

//go:noescape
func rows4Q4KNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)

//go:noescape
func rows4Q6KSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)

//go:noescape
func rows4Q6KNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)

// quantTilesARM64 are the block types with a four-token (prefill) kernel:
// those of the Q8_0 and Q4_K_M files.
var quantTilesARM64 = []struct {
	qt         quantType
	sdot, neon tileKernel
}{
	{typeQ8_0, rows4Q8_0SDOT, rows4Q8_0NEON},
	{typeQ4K, rows4Q4KSDOT, rows4Q4KNEON},
	{typeQ6K, rows4Q6KSDOT, rows4Q6KNEON},
}

// useQuantTilesNEON puts the four-token kernels into k (rowsN, tokens 4),
// the SDOT ones when sdot.
func useQuantTilesNEON(k *kernels, sdot bool) {
	for _, v := range quantTilesARM64 {
		kern := v.neon
		if sdot {
			kern = v.sdot
		}
		q := quantTypes[v.qt]
		k.quant[v.qt].rowsN = tileRows(kern, int(q.gguf.TypeSize()), q.form.blockLen(), q.form.blockLen()/q.form.sumLen(), 4)
		k.quant[v.qt].tokens = 4
	}
}
