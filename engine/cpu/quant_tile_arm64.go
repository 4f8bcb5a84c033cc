//go:build !purego

package cpu

import "unsafe"

// quantTileKernel is the signature of the arm64 four-token kernels
// (quant_tile_arm64.s): nrows ≥ 1 rows of nb ≥ 1 blocks times four
// activation rows (q, d and sum each back to back), token t's product
// with row i at out[t·ldo + i].
type quantTileKernel func(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)

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
	sdot, neon quantTileKernel
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
		k.quant[v.qt].rowsN = quantTileARM64(kern, int(q.gguf.TypeSize()), q.form)
		k.quant[v.qt].tokens = 4
	}
}

// quantTileARM64 wraps kern, whose blocks are blockBytes long and read
// activations in form f, as a rowsN entry for groups of four tokens.
func quantTileARM64(kern quantTileKernel, blockBytes int, f blockForm) func([]byte, q8Blocks, []float32, int) {
	const tokens = 4
	bl, sums := f.blockLen(), f.blockLen()/f.sumLen()
	return func(w []byte, x q8Blocks, out []float32, ldo int) {
		nb := len(x.d) / tokens
		nrows := len(out) - (tokens-1)*ldo
		if nrows <= 0 {
			return
		}
		if nb == 0 {
			for t := range tokens {
				clear(out[t*ldo : t*ldo+nrows])
			}
			return
		}
		_ = w[nrows*nb*blockBytes-1]
		_ = x.q[tokens*nb*bl-1]
		_ = x.sum[tokens*nb*sums-1]
		kern(unsafe.SliceData(w), unsafe.SliceData(x.q), unsafe.SliceData(x.d), unsafe.SliceData(x.sum), nb, nrows, unsafe.SliceData(out), ldo)
	}
}
