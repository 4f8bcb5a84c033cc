//go:build !purego && (amd64 || arm64)

package cpu

// gemmOnePassActs is how many bytes of activations a SIMD GEMM call takes
// in one K pass (gemmSIMD's gemmL2Acts): packSlabs keeps calls within it.
const gemmOnePassActs = gemmL2Acts
