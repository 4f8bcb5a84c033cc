//go:build purego || !(amd64 || arm64)

package cpu

// gemmOnePassActs bounds packSlabs' calls as on SIMD builds; the portable
// GEMM's passes (gemmGoK) do not depend on the rows of a call, so any
// bound keeps a row's result its own.
const gemmOnePassActs = 512 << 10
