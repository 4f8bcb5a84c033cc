//go:build !purego

package cpu

// The one-token Q6_K kernel on AVX-512 VNNI (q6k_avx512_amd64.s). Q6_K is
// a Q4_K_M file's output head and part of its attention and FFN
// matrices. Its AVX2 kernel takes ~8.7 ns a super-block on a core; the
// 512-bit one reads 64 low-bit bytes and 32 high-bit bytes at a time,
// merges them into 6-bit codes with one VPTERNLOGD per 64, and applies
// two halves' sixteen scales with one VPMADDWD and one VPDPWSSD.

//go:noescape
func rowsQ6KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

// useQ6KVNNI puts the VNNI Q6_K kernel into k in rowsQ6KAVX2's place
// (addSIMD calls it with the Q4_K one, under cpuFeatures.vbmi; the
// kernel itself needs only GFNI besides AVX-512 BW and VNNI).
func useQ6KVNNI(k *kernels) {
	k.quant[typeQ6K].rows = superBlockRows(rowsQ6KVNNI, 210)
}
