//go:build !purego

package cpu

//go:generate go run gemm_gen.go

// The float prefill panels (gemm_amd64.s, written by gemm_gen.go).

//go:noescape
func gemmF32AVX512(w *byte, ws int, x *float32, xs int, k int, n int, out *float32, ldo int)

//go:noescape
func gemmF16AVX512(w *byte, ws int, x *float32, xs int, k int, n int, out *float32, ldo int)

//go:noescape
func gemmBF16AVX512(w *byte, ws int, x *float32, xs int, k int, n int, out *float32, ldo int)

//go:noescape
func gemmF32AVX2(w *byte, ws int, x *float32, xs int, k int, n int, out *float32, ldo int)

//go:noescape
func gemmF16AVX2(w *byte, ws int, x *float32, xs int, k int, n int, out *float32, ldo int)

//go:noescape
func gemmBF16AVX2(w *byte, ws int, x *float32, xs int, k int, n int, out *float32, ldo int)

var (
	gemmAVX512 = gemmPanels{gemmF32AVX512, gemmF16AVX512, gemmBF16AVX512, 16}
	gemmAVX2   = gemmPanels{gemmF32AVX2, gemmF16AVX2, gemmBF16AVX2, 8}
)

// useGemm puts the float prefill panels f allows into k (AVX2 first: the
// panels need AVX2, FMA and F16C).
func useGemm(k *kernels, f cpuFeatures) {
	if !f.avx2 {
		return
	}
	p := gemmAVX2
	if f.avx512 {
		p = gemmAVX512
	}
	k.gemm = p.gemm(k)
}
