//go:build !purego

package cpu

//go:noescape
func b3x4RowsVNNI(groups *byte, q *int8, nc int, tail *int8, ngroups int, total int32, xs float32, scale *float32, out *float32)

//go:noescape
func b3DotVNNI(row *byte, q *int8, nc int, tail *int8) int32

//go:noescape
func b3x4Dot4x4VNNI(group *byte, q *int8, k int, nc int, lastp int, out *int32)

// useBase3 puts the B3 kernels into k on AVX-512 VNNI CPUs: decode rows
// and a prefill kernel (four rows times four tokens). Other x86 tables
// have none, so base-3 matrices go to I2 there: an AVX2 B3 kernel (digits
// extracted with byte averages, VPMADDUBSW) decoded BitNet-2B at 0.82–0.87
// of I2's speed on the Zen 4 VM with EDGECTL_NO_AVX512=1, in both of its
// memory states.
func useBase3(k *kernels, f cpuFeatures) {
	if f.vnni {
		b3 := &k.tern[typeB3]
		b3.rows, b3.dot = b3RowsKernel(b3x4RowsVNNI), b3DotKernel(b3DotVNNI)
		b3.dot4x4 = b3Dot4x4Kernel(b3x4Dot4x4VNNI)
	}
}
