//go:build !purego

package cpu

import (
	"sync"
	"unsafe"
)

// The AVX-512 VNNI prefill kernels (quant_avx512_amd64.s): a pack routine
// rearranges a group of eight tokens' activations into scratch, a kernel
// multiplies rows with the pack.

//go:noescape
func packQ8_0x8(dst *byte, q *int8, d *float32, nb int)

//go:noescape
func packQ4Kx8(dst *byte, q *int8, d *float32, bsum *int16, nb int)

//go:noescape
func packQ6Kx8(dst *byte, q *int8, d *float32, bsum *int16, nb int)

//go:noescape
func rows8Q8_0P(w *byte, p *byte, nb int, nrows int, out *float32, ldo int)

//go:noescape
func rows8Q4_0P(w *byte, p *byte, nb int, nrows int, out *float32, ldo int)

//go:noescape
func rows8Q4KP(w *byte, p *byte, nb int, nrows int, out *float32, ldo int)

//go:noescape
func rows8Q5KP(w *byte, p *byte, nb int, nrows int, out *float32, ldo int)

//go:noescape
func rows8Q6KP(w *byte, p *byte, nb int, nrows int, out *float32, ldo int)

// Pack bytes per 256 elements (a super-block; eight Q8_0 blocks).
const (
	packQ8_0Bytes = 3072
	packKBytes    = 2624
)

// useQuantVNNI puts the AVX-512 VNNI prefill kernels into k: eight
// tokens a call for Q8_0, Q4_0, Q4_K, Q5_K and Q6_K. Rows of the
// 32-element types whose blocks do not fill super-blocks of eight keep
// the AVX2 four-token kernels.
func useQuantVNNI(k *kernels) {
	q := &k.quant
	q[typeQ8_0].rowsN, q[typeQ8_0].tokens = packedQ8_0(rows8Q8_0P, tileRows(rows4Q8_0AVX2, 34, 32, 0, 4), 34), 8
	q[typeQ4_0].rowsN, q[typeQ4_0].tokens = packedQ8_0(rows8Q4_0P, tileRows(rows4Q4_0AVX2, 18, 32, 0, 4), 18), 8
	q[typeQ4K].rowsN, q[typeQ4K].tokens = packedK(packQ4Kx8, rows8Q4KP, 144), 8
	q[typeQ5K].rowsN, q[typeQ5K].tokens = packedK(packQ4Kx8, rows8Q5KP, 176), 8
	q[typeQ6K].rowsN, q[typeQ6K].tokens = packedK(packQ6Kx8, rows8Q6KP, 210), 8
}

// packedQ8_0 is the rowsN of a type in the Q8_0 activation form from its
// kernel on packQ8_0x8's pack, and its four-token kernel for rows whose
// blocks do not fill super-blocks (run on tokens 0–3, then 4–7).
func packedQ8_0(kern func(w, p *byte, nb, nrows int, out *float32, ldo int), four func([]byte, q8Blocks, []float32, int), blockBytes int) func([]byte, q8Blocks, []float32, int) {
	return func(w []byte, x q8Blocks, out []float32, ldo int) {
		nb := len(x.d) / 8
		if nb%8 != 0 {
			k, nrows := 32*nb, len(out)-7*ldo
			four(w, q8Blocks{q: x.q[:4*k], d: x.d[:4*nb]}, out[:3*ldo+nrows], ldo)
			four(w, q8Blocks{q: x.q[4*k:], d: x.d[4*nb:]}, out[4*ldo:], ldo)
			return
		}
		_ = x.q[8*32*nb-1]
		packedRows(w, x, out, ldo, blockBytes, nb/8*packQ8_0Bytes, func(p *byte) {
			packQ8_0x8(p, unsafe.SliceData(x.q), unsafe.SliceData(x.d), nb)
		}, kern)
	}
}

// packedK is a K-quant's rowsN from its pack routine and kernel.
func packedK(pack func(dst *byte, q *int8, d *float32, bsum *int16, nb int), kern func(w, p *byte, nb, nrows int, out *float32, ldo int), blockBytes int) func([]byte, q8Blocks, []float32, int) {
	return func(w []byte, x q8Blocks, out []float32, ldo int) {
		nb := len(x.d) / 8
		_ = x.q[8*256*nb-1]
		_ = x.sum[8*16*nb-1]
		packedRows(w, x, out, ldo, blockBytes, nb*packKBytes, func(p *byte) {
			pack(p, unsafe.SliceData(x.q), unsafe.SliceData(x.d), unsafe.SliceData(x.sum), nb)
		}, kern)
	}
}

// packedRows packs a token group (len(x.d)/8 blocks of blockBytes a
// row, packBytes of pack) into pooled scratch and runs kern on the rows.
func packedRows(w []byte, x q8Blocks, out []float32, ldo, blockBytes, packBytes int, pack func(p *byte), kern func(w, p *byte, nb, nrows int, out *float32, ldo int)) {
	nb := len(x.d) / 8
	nrows := len(out) - 7*ldo
	if nrows <= 0 {
		return
	}
	if nb == 0 {
		for t := range 8 {
			clear(out[t*ldo : t*ldo+nrows])
		}
		return
	}
	_ = w[nrows*nb*blockBytes-1]
	buf := packPool.Get().(*[]byte)
	if len(*buf) < packBytes+64 {
		*buf = make([]byte, packBytes+64)
	}
	// 64-byte aligned: the kernels read the pack a cache line at a time.
	off := -uintptr(unsafe.Pointer(unsafe.SliceData(*buf))) & 63
	p := unsafe.SliceData((*buf)[off : off+uintptr(packBytes)])
	pack(p)
	kern(unsafe.SliceData(w), p, nb, nrows, unsafe.SliceData(out), ldo)
	packPool.Put(buf)
}

// packPool holds the packs' scratch, one per concurrent product.
var packPool = sync.Pool{New: func() any { return new([]byte) }}
