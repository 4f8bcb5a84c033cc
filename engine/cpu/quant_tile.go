package cpu

import "unsafe"

// tileActs is rows t0…t1−1 of form f (quantizeBlocks must have run) as
// one q8Blocks, back to back, as a rowsN kernel reads a token group.
func tileActs(a *acts, f blockForm, t0, t1 int) q8Blocks {
	b := &a.blocks[f]
	nb, ns := a.k/f.blockLen(), a.k/f.sumLen()
	return q8Blocks{q: b.q[t0*a.k : t1*a.k], d: b.d[t0*nb : t1*nb], sum: b.sum[t0*ns : t1*ns]}
}

// rowsKernel is a one-token block-type kernel's signature: nrows ≥ 1
// consecutive rows of nb ≥ 1 blocks against one activation row (codes q,
// scales d, sums sum; kernels of types without offsets or mins ignore
// sum), one float32 a row.
type rowsKernel func(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)

// blockKernelRows wraps kern, over blocks of blockLen elements and
// blockBytes bytes that read sums activation sums each (0: none), as a
// quantKernels.rows entry: the bounds checked once, then one call.
func blockKernelRows(kern rowsKernel, blockBytes, blockLen, sums int) func([]byte, q8Blocks, []float32) {
	return func(w []byte, x q8Blocks, out []float32) {
		nb := len(x.d)
		if nb == 0 || len(out) == 0 {
			clear(out)
			return
		}
		_ = w[len(out)*nb*blockBytes-1]
		_ = x.q[nb*blockLen-1]
		if sums > 0 {
			_ = x.sum[nb*sums-1]
		}
		kern(unsafe.SliceData(w), unsafe.SliceData(x.q), unsafe.SliceData(x.d), unsafe.SliceData(x.sum), nb, len(out), unsafe.SliceData(out))
	}
}

// tileKernel is a multi-token kernel's signature: nrows rows of nb blocks
// times `tokens` activation rows (q, d and bsum each back to back), token
// t's product with row i at out[t·ldo + i]. bsum is read by the types
// with offsets or mins.
type tileKernel func(w *byte, q *int8, d *float32, bsum *int16, nb, nrows int, out *float32, ldo int)

// tileRows wraps kern, over blocks of blockLen elements and blockBytes
// bytes that read sums activation sums each, as a quantKernels.rowsN for
// groups of tokens activation rows.
func tileRows(kern tileKernel, blockBytes, blockLen, sums, tokens int) func([]byte, q8Blocks, []float32, int) {
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
		_ = x.q[tokens*nb*blockLen-1]
		if sums > 0 {
			_ = x.sum[tokens*nb*sums-1]
		}
		kern(unsafe.SliceData(w), unsafe.SliceData(x.q), unsafe.SliceData(x.d), unsafe.SliceData(x.sum), nb, nrows, unsafe.SliceData(out), ldo)
	}
}
