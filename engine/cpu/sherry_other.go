//go:build purego || !(amd64 || arm64)

package cpu

// Without assembly there are no Sherry kernels: the load repacks Sherry
// to I2, and EDGECTL_NATIVE_PACKING runs it with sherryDot.

func sherrySIMDFor(cpuFeatures) *sherrySIMD { return nil }
