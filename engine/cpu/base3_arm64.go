//go:build !purego

package cpu

//go:noescape
func b3x4RowsSDOT(groups *byte, q *int8, nc int, tail *int8, ngroups int, total int32, xs float32, scale *float32, out *float32)

//go:noescape
func b3DotSDOT(row *byte, q *int8, nc int, tail *int8) int32

// useBase3 puts the B3 kernels into k where the CPU has SDOT (decode rows
// and one-row dots; prefill multiplies each token with the rows kernel).
// Without SDOT (ARMv8.0) base-3 rows go to I2 as before. The kernels are
// exact under qemu; their speed against I2 on boards is not measured
// (docs/engine.md, Limits): where cores rather than memory bound decode,
// dropping this registration keeps base-3 rows in I2.
func useBase3(k *kernels, f cpuFeatures) {
	if f.neon && f.dotProd {
		b3 := &k.tern[typeB3]
		b3.rows, b3.dot = b3RowsKernel(b3x4RowsSDOT), b3DotKernel(b3DotSDOT)
	}
}
