//go:build !purego

package cpu

// The float prefill panels for NEON (gemm_arm64.s, written by
// gemm_gen.go).

//go:noescape
func gemmF32NEON(w *byte, ws int, x *float32, xs int, k int, n int, out *float32, ldo int)

//go:noescape
func gemmF16NEON(w *byte, ws int, x *float32, xs int, k int, n int, out *float32, ldo int)

//go:noescape
func gemmBF16NEON(w *byte, ws int, x *float32, xs int, k int, n int, out *float32, ldo int)

var gemmNEON = gemmPanels{gemmF32NEON, gemmF16NEON, gemmBF16NEON, 4}

// useGemm puts the NEON float prefill panels into k.
func useGemm(k *kernels, f cpuFeatures) {
	if f.neon {
		k.gemm = gemmNEON.gemm(k)
	}
}
