package cpu

import "github.com/edgectl/edgectl/internal/envconfig"

// kernelName says which kernels run ("go", "avx2"); reported by benchmarks.
var kernelName = "go"

func pureGoEnv() bool { return envconfig.PureGo.Get() }

// readSum loads every cache line of b as fast as a core can; benchmarks use
// it to measure read bandwidth. SIMD where available.
var readSum = readSumGo

func readSumGo(b []byte) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+32 <= len(b); i += 32 {
		s0 += uint64(b[i]) | uint64(b[i+8])<<8
		s1 += uint64(b[i+16])
		s2 += uint64(b[i+24])
		s3 ^= uint64(b[i+31])
	}
	return s0 + s1 + s2 + s3
}
