package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
)

// The other block types' single products, the same 4·4864 × 1024 matrix
// as BenchmarkKernelQ4_0 and …Q4_K (EDGECTL_PUREGO=1 times the portable
// kernels, EDGECTL_NO_AVX512=1 the AVX2 ones).
func BenchmarkKernelQ4_1(b *testing.B)   { benchQuantKernel(b, gguf.TypeQ4_1, 4*4864, 1024, 1) }
func BenchmarkKernelQ5_0(b *testing.B)   { benchQuantKernel(b, gguf.TypeQ5_0, 4*4864, 1024, 1) }
func BenchmarkKernelQ5_1(b *testing.B)   { benchQuantKernel(b, gguf.TypeQ5_1, 4*4864, 1024, 1) }
func BenchmarkKernelIQ4_NL(b *testing.B) { benchQuantKernel(b, gguf.TypeIQ4_NL, 4*4864, 1024, 1) }
func BenchmarkKernelQ2_K(b *testing.B)   { benchQuantKernel(b, gguf.TypeQ2_K, 4*4864, 1024, 1) }
func BenchmarkKernelQ3_K(b *testing.B)   { benchQuantKernel(b, gguf.TypeQ3_K, 4*4864, 1024, 1) }

// BenchmarkQuantRowsInCache times one rows call of every block type on
// 128 × 1024 weights that stay in L2, on the calling thread: the kernels'
// arithmetic alone, steadier than the pooled products above on a shared
// machine. ns/block32 is the time per 32 weights.
func BenchmarkQuantRowsInCache(b *testing.B) {
	const rows, k = 128, 1024
	kern := hostKernels(b)
	for qt := range numQuantTypes {
		typ, form := quantTypes[qt].gguf, quantTypes[qt].form
		b.Run(kern.name+"/"+typ.String(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, uint64(qt)))
			x := make([]float32, rows*k)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			w, err := gguf.Quantize(typ, x)
			if err != nil {
				b.Fatal(err)
			}
			a := newActs(kern, rng, 1, k)
			a.quantizeBlocks(form)
			xb, out := a.blockRow(form, 0), make([]float32, rows)
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				kern.quant[qt].rows(w, xb, out)
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*rows*k/32), "ns/block32")
		})
	}
}
