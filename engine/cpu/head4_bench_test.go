package cpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/half"
)

// benchHead is a float head of BitNet-2B's shape (128256 × 2560, F16,
// normal values of σ 0.05 like the generated benchmark model's), made once.
var benchHead *floatRows

func benchHeadRows(b *testing.B) *floatRows {
	if benchHead == nil {
		const rows, cols = 128256, 2560
		rng := rand.New(rand.NewPCG(2, 2))
		raw := make([]byte, 2*rows*cols)
		for i := 0; i < len(raw); i += 2 {
			h := half.F32ToF16(float32(0.05 * rng.NormFloat64()))
			raw[i], raw[i+1] = byte(h), byte(h>>8)
		}
		f, err := newFloatRows(raw, "F16", rows, cols)
		if err != nil {
			b.Fatal(err)
		}
		benchHead = f
	}
	return benchHead
}

// BenchmarkQuantizeHead times building each head form from the F16 rows
// on all cores, as a load does.
func BenchmarkQuantizeHead(b *testing.B) {
	f := benchHeadRows(b)
	for _, form := range []string{"q8", "q4", "q3x", "q2x"} {
		b.Run(form, func(b *testing.B) {
			b.SetBytes(int64(len(f.raw)))
			cpu0 := cpuTime()
			for range b.N {
				mem := &arena{}
				compactHead(f, form, mem)
				mem.Close()
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/head")
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/head")
		})
	}
}

// BenchmarkKernelHead times the head's product for one token (decode),
// activation quantization included, in GB/s of head bytes: the int8 head,
// the 4-bit one (Q4_K), the other 4.5-bit candidates, and the 3- and
// 2-bit sketches (q3x, q2x: Q3_K, Q2_K, without their re-scoring), in one
// run so that they share the machine's state.
func BenchmarkKernelHead(b *testing.B) {
	f := benchHeadRows(b)
	m := &model{pool: newPool(benchThreads), kern: hostKernels(b)}
	defer m.pool.close()
	for _, form := range []string{"q8", "q4", "Q4_0", "IQ4_NL", "q3x", "q2x"} {
		b.Run(form, func(b *testing.B) {
			mem := &arena{}
			defer mem.Close()
			var l linear
			switch form {
			case "Q4_0", "IQ4_NL":
				typ := map[string]gguf.Type{"Q4_0": gguf.TypeQ4_0, "IQ4_NL": gguf.TypeIQ4_NL}[form]
				q, err := quantizeBlockHead(f, typ, mem)
				if err != nil {
					b.Fatal(err)
				}
				l = q
			default:
				l = compactHead(f, form, mem)
			}
			a := newActs(m.kern, rand.New(rand.NewPCG(1, 1)), 1, f.c)
			out := make([]float32, f.r)
			b.SetBytes(l.size())
			b.ResetTimer()
			for range b.N {
				a.reset(1, f.c) // the forms are computed again, as each token does
				m.matmul(out, l, a)
			}
			b.ReportMetric(float64(l.size())/1e6, "MB")
		})
	}
}

// BenchmarkLoadTQ2_0Heads times loading the generated BitNet-2B TQ2_0
// file (bench_test.go) with each head form: the difference is the time
// the head's quantization adds to a load (its F16 rows come from the page
// cache after the first load).
func BenchmarkLoadTQ2_0Heads(b *testing.B) {
	p := benchModel(b, "TQ2_0")
	for _, head := range []string{"float", "q8", "q4"} {
		b.Run(head, func(b *testing.B) {
			cpu0 := cpuTime()
			for range b.N {
				em, err := New().Load(context.Background(), p, engine.LoadOptions{Threads: benchThreads, ContextLength: 512, Head: head})
				if err != nil {
					b.Fatal(err)
				}
				em.Close()
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/load")
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/load")
		})
	}
}

// BenchmarkQuantRowQ4K compares the head's Q4_K quantizer with
// gguf.Quantize (the rule it reproduces) on one core, per BitNet-2B row,
// and times the 3- and 2-bit heads' quantizers (their trial steps) beside
// gguf's rules for the same types.
func BenchmarkQuantRowQ4K(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	x := make([]float32, 2560)
	for i := range x {
		x[i] = float32(0.05 * rng.NormFloat64())
	}
	dst := make([]byte, 10*144)
	for _, c := range []struct {
		typ  gguf.Type
		head func([]float32, []byte)
	}{{gguf.TypeQ4_K, quantRowQ4K}, {gguf.TypeQ3_K, quantRowQ3K}, {gguf.TypeQ2_K, quantRowQ2K}} {
		b.Run(c.typ.String()+"/gguf", func(b *testing.B) {
			for range b.N {
				q, _ := gguf.Quantize(c.typ, x)
				copy(dst, q)
			}
		})
		b.Run(c.typ.String()+"/head", func(b *testing.B) {
			for range b.N {
				c.head(x, dst)
			}
		})
	}
}
