package cpu

import (
	"math/rand/v2"
	"testing"
)

// benchKernel measures one matrix product in GB/s of weights read, for a
// matrix larger than the caches (decode's situation).
func benchKernel(b *testing.B, kind string, rows, k, tokens int) {
	rng := rand.New(rand.NewPCG(1, 1))
	var l linear
	switch kind {
	case "F16":
		raw := make([]byte, 2*rows*k)
		for i := 1; i < len(raw); i += 2 {
			raw[i] = 0x2c
		}
		l, _ = newFloatRows(raw, "F16", rows, k)
	case "Q8":
		raw := make([]byte, 2*rows*k)
		for i := range raw {
			raw[i] = byte(rng.IntN(256)) & 0xbf // finite halves
		}
		f := &floatRows{raw: raw, dt: "F16", r: rows, c: k}
		l = quantizeHead(f, &arena{})
	default:
		rb := rowBytesFor(kind, k)
		data := make([]byte, rows*rb)
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		var sc []float32
		if kind != "TQ2_0" && kind != "TQ1_0" {
			sc = make([]float32, rows)
		}
		l = newTernary(kind, data, rows, k, sc)
	}
	m := &model{pool: newPool(benchThreads), kern: hostKernels(b)}
	defer m.pool.close()
	a := newActs(m.kern, rng, tokens, k)
	out := make([]float32, rows*tokens)
	b.SetBytes(l.size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.quant = false
		m.matmul(out, l, a)
	}
}

func BenchmarkKernelTQ2(b *testing.B)     { benchKernel(b, "TQ2_0", 6912*4, 2560, 1) }
func BenchmarkKernelTQ2x64(b *testing.B)  { benchKernel(b, "TQ2_0", 6912, 2560, 64) }
func BenchmarkKernelTQ1(b *testing.B)     { benchKernel(b, "TQ1_0", 6912*4, 2560, 1) }
func BenchmarkKernelHALO2(b *testing.B)   { benchKernel(b, "halo2", 6912*4, 2560, 1) }
func BenchmarkKernelSherry(b *testing.B)  { benchKernel(b, "sherry", 6912*4, 2560, 1) }
func BenchmarkKernelTQ1H(b *testing.B)    { benchKernel(b, "tq1h", 6912*4, 2560, 1) }
func BenchmarkKernelF16Head(b *testing.B) { benchKernel(b, "F16", 128256, 2560, 1) }
func BenchmarkKernelI2(b *testing.B)      { benchKernel(b, "I2", 6912*4, 2560, 1) }
func BenchmarkKernelQ8Head(b *testing.B)  { benchKernel(b, "Q8", 128256, 2560, 1) }
