//go:build !purego

package cpu

// The one-token Q2_K and Q3_K kernels on AVX-512 VNNI
// (q23k_avx512_amd64.s). Decode
// keeps the AVX2 kernels of the other block types (they are read-bound),
// but Q2_K's AVX2 kernel is not: at 2.6 bits a weight it spends ~7
// operations on 32 codes (shift, mask, VPMADDUBSW, the scales' shuffle,
// widening and VPMADDWD, the add) and tops out near 25 GB/s on two cores,
// so the q2x LM head (a Q2_K sketch, 108 MB on BitNet-2B against q4x's
// 185) read fewer bytes without finishing sooner. The 512-bit kernel
// takes four operations on 64 codes (a variable shift, a masked table
// offset, a table lookup that applies the scale, one VPDPBUSD).

//
// Q3_K's AVX2 kernel is compute-bound the same way (8–9.5 ns a super-block
// on one core, 12–14 GB/s), which kept the q3x head (a Q3_K sketch, 141 MB
// on BitNet-2B) from finishing before q4x's. Its 512-bit kernel builds
// 64 3-bit codes with a shift, a VGF2P8AFFINEQB (the third bits) and a
// VPTERNLOGD, one VPDPBUSD, and applies the signed scales to packed sums
// by VPMADDWD.

//go:noescape
func rowsQ2KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

//go:noescape
func rowsQ3KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

// useQ23KVNNI puts the VNNI Q2_K and Q3_K kernels into k in the AVX2
// ones' place (useVNNI calls it). They need AVX-512 BW and VNNI only.
func useQ23KVNNI(k *kernels) {
	k.quant[typeQ2K].rows = superBlockRows(rowsQ2KVNNI, 84)
	k.quant[typeQ3K].rows = superBlockRows(rowsQ3KVNNI, 110)
}
