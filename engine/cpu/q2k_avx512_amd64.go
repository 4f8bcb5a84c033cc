//go:build !purego

package cpu

// The one-token Q2_K kernel on AVX-512 VNNI (q2k_avx512_amd64.s). Decode
// keeps the AVX2 kernels of the other block types (they are read-bound),
// but Q2_K's AVX2 kernel is not: at 2.6 bits a weight it spends ~7
// operations on 32 codes (shift, mask, VPMADDUBSW, the scales' shuffle,
// widening and VPMADDWD, the add) and tops out near 25 GB/s on two cores,
// so the q2x LM head (a Q2_K sketch, 108 MB on BitNet-2B against q4x's
// 185) read fewer bytes without finishing sooner. The 512-bit kernel
// takes four operations on 64 codes (a variable shift, a masked table
// offset, a table lookup that applies the scale, one VPDPBUSD).

//go:noescape
func rowsQ2KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

// useQ2KVNNI puts the VNNI Q2_K kernel into k in rowsQ2KAVX2's place
// (useVNNI calls it).
func useQ2KVNNI(k *kernels) {
	k.quant[typeQ2K].rows = superBlockRows(rowsQ2KVNNI, 84)
}
