//go:build !purego

package cpu

// The one-token Q4_K kernel on AVX-512 VNNI (q4k_avx512_amd64.s). Q4_K is
// the LM head's type under q4x (185 MB a BitNet-2B token) and most of a
// Q4_K_M file's bytes. Its AVX2 kernel spends ~60 operations on a
// super-block and tops out near 42 GB/s on two Zen 4 cores (~6 ns a
// super-block a core), which the memory outruns in its fast state
// (docs/engine.md, Decode results). The 512-bit kernel reads 64 code
// bytes at a time against activations in nibbleOrder, packs the int32
// sums of four products to words so that one VPMADDWD applies the scales
// of two chunks, and runs two rows a pass.

//go:noescape
func rowsQ4KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

// rowsQ5KVNNI is rowsQ4KVNNI for Q5_K (Q5_K_M files): the fifth bits
// rotated into place and merged, two operations per 64 codes more.
//
//go:noescape
func rowsQ5KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)

// useQ4KVNNI puts the VNNI Q4_K and Q5_K kernels into k in place of the
// AVX2 ones (addSIMD calls it where the CPU also has VBMI's VPERMB and
// GFNI's affine byte transform), marked as reading the activations in
// nibbleOrder (quantKernels.nibbles: acts.prepare writes them).
func useQ4KVNNI(k *kernels) {
	k.quant[typeQ4K].rows, k.quant[typeQ4K].nibbles = nibbleRows(rowsQ4KVNNI, 144), true
	k.quant[typeQ5K].rows, k.quant[typeQ5K].nibbles = nibbleRows(rowsQ5KVNNI, 176), true
}

// nibbleRows is superBlockRows for a kernel that reads the activations in
// nibbleOrder.
func nibbleRows(kern rowsKernel, blockBytes int) func([]byte, q8Blocks, []float32) {
	rows := superBlockRows(kern, blockBytes)
	return func(w []byte, x q8Blocks, out []float32) {
		x.q = x.qn
		rows(w, x, out)
	}
}
