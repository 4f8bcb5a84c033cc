package cpu

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/h1b"
	"github.com/edgectl/edgectl/sherry"
)

// benchSherryMul times one core multiplying a Sherry matrix (rows × K,
// random 3:4-sparse weights) in layout "sherry" (as stored), "I2" (the
// I2/I2x4 repack) or "lut" (the lookup layout), with tokens activation
// rows, in
// GB/s of the weight bytes the product reads (b.SetBytes). rows·K small
// enough for L2 measures the kernel's arithmetic; large, the stream.
func benchSherryMul(b *testing.B, layout string, rows, k, tokens int) {
	rng := rand.New(rand.NewPCG(7, 7))
	kern := hostKernels(b)
	rb := k * 5 / 32
	data := make([]byte, rows*rb)
	f := make([]float32, k)
	for r := range rows {
		for i := 0; i < k; i += 4 {
			zp := rng.IntN(4)
			for p := range 4 {
				f[i+p] = float32(2*rng.IntN(2) - 1)
				if p == zp {
					f[i+p] = 0
				}
			}
		}
		must(b, sherry.PackRow(data[r*rb:(r+1)*rb], f))
	}
	scales := make([]float32, rows)
	for i := range scales {
		scales[i] = 0.5
	}
	mem := &arena{}
	defer mem.Close()
	var l linear = newTernary("sherry", data, rows, k, scales)
	switch layout {
	case "I2":
		l = repack(l.(*ternLinear), mem, kern.hasI2x4())
	case "lut":
		lt := repackSherryLUT(kern, l.(*ternLinear), mem)
		if lt == nil {
			b.Skip("no Sherry lookup kernels on this CPU")
		}
		l = lt
	}
	a := newActs(kern, rng, tokens, k)
	out := make([]float32, rows*tokens)
	b.SetBytes(l.size())
	b.ResetTimer()
	for range b.N {
		a.quant = false
		a.prepare(l)
		l.mul(out, rows, a, 0, rows)
	}
	b.ReportMetric(float64(rows*k*tokens)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweight-token/s")
	b.Logf("%s (%s), load average %s", l.format(), l.(*ternLinear).kind, loadAvg())
}

// Decode: 256 rows of 2560 (100 KB Sherry, 160 KB I2: in L2), 13824
// rows (5.4 MB, 8.8 MB: in this VM's 32 MB L3) and 131072 (52 MB, 84 MB:
// from memory).
func BenchmarkSherryRowsL2(b *testing.B)     { benchSherryMul(b, "sherry", 256, 2560, 1) }
func BenchmarkSherryRowsL2I2(b *testing.B)   { benchSherryMul(b, "I2", 256, 2560, 1) }
func BenchmarkSherryRowsMem(b *testing.B)    { benchSherryMul(b, "sherry", 13824, 2560, 1) }
func BenchmarkSherryRowsMemI2(b *testing.B)  { benchSherryMul(b, "I2", 13824, 2560, 1) }
func BenchmarkSherryRowsDRAM(b *testing.B)   { benchSherryMul(b, "sherry", 131072, 2560, 1) }
func BenchmarkSherryRowsDRAMI2(b *testing.B) { benchSherryMul(b, "I2", 131072, 2560, 1) }
func BenchmarkSherryPrefill(b *testing.B)    { benchSherryMul(b, "sherry", 2048, 2560, 64) }
func BenchmarkSherryPrefillI2(b *testing.B)  { benchSherryMul(b, "I2", 2048, 2560, 64) }
func BenchmarkSherryPrefillFFN(b *testing.B) { benchSherryMul(b, "sherry", 2560, 6912, 64) }
func BenchmarkSherryPrefillFFNI2(b *testing.B) {
	benchSherryMul(b, "I2", 2560, 6912, 64)
}

// The same in the lookup layout (sherry_lut.go).
func BenchmarkSherryRowsL2LUT(b *testing.B)   { benchSherryMul(b, "lut", 256, 2560, 1) }
func BenchmarkSherryRowsDRAMLUT(b *testing.B) { benchSherryMul(b, "lut", 131072, 2560, 1) }
func BenchmarkSherryPrefillLUT(b *testing.B)  { benchSherryMul(b, "lut", 2048, 2560, 64) }
func BenchmarkSherryPrefillFFNLUT(b *testing.B) {
	benchSherryMul(b, "lut", 2560, 6912, 64)
}

// bitnet12 is BitNet-2B's width with 12 layers: issue 21's model for the
// Sherry-against-TQ2_0 decode comparison.
var bitnet12 = bitnetSpec{hidden: 2560, ffn: 6912, layers: 12, heads: 20, kv: 5, vocab: 128256, seed: 12}

// bench12Model returns the cached 12-layer model in format name ("sherry"
// .h1b or "TQ2_0" GGUF), generating it on first use.
func bench12Model(b *testing.B, name string) string {
	benchGenMu.Lock()
	defer benchGenMu.Unlock()
	dir := filepath.Join(os.TempDir(), "edgectl-bench", benchVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, map[string]string{"sherry": "bitnet12-sherry.h1b", "TQ2_0": "bitnet12-tq2_0.gguf"}[name])
	if _, err := os.Stat(p); err == nil {
		return p
	}
	start := time.Now()
	var err error
	switch name {
	case "sherry":
		err = bitnet12.writeH1B(p, h1b.V3Sherry)
	case "TQ2_0":
		err = bitnet12.writeGGUF(p, gguf.TypeTQ2_0)
	default:
		b.Fatalf("no 12-layer %s model", name)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %s in %s", p, time.Since(start).Round(time.Second))
	return p
}

// Decode and prefill on the 12-layer model: Sherry as the load places it
// by default (repacked to I2x4) and as stored (EDGECTL_NATIVE_PACKING=1),
// against TQ2_0, with the int8 head and the 4-bit one (EDGECTL_HEAD=q4).
// On a shared machine compare them with BenchmarkSherryVsTQ2 instead,
// which alternates rounds in one process.
func BenchmarkDecode12Sherry(b *testing.B) { benchDecode(b, bench12Model(b, "sherry")) }
func BenchmarkDecode12SherryNative(b *testing.B) {
	b.Setenv("EDGECTL_NATIVE_PACKING", "1")
	benchDecode(b, bench12Model(b, "sherry"))
}
func BenchmarkDecode12TQ2_0(b *testing.B) { benchDecode(b, bench12Model(b, "TQ2_0")) }
func BenchmarkDecode12SherryNativeQ4Head(b *testing.B) {
	b.Setenv("EDGECTL_NATIVE_PACKING", "1")
	b.Setenv("EDGECTL_HEAD", "q4")
	benchDecode(b, bench12Model(b, "sherry"))
}
func BenchmarkDecode12TQ2_0Q4Head(b *testing.B) {
	b.Setenv("EDGECTL_HEAD", "q4")
	benchDecode(b, bench12Model(b, "TQ2_0"))
}
func BenchmarkPrefill12Sherry(b *testing.B) { benchPrefill(b, bench12Model(b, "sherry")) }
func BenchmarkPrefill12SherryNative(b *testing.B) {
	b.Setenv("EDGECTL_NATIVE_PACKING", "1")
	benchPrefill(b, bench12Model(b, "sherry"))
}
func BenchmarkPrefill12TQ2_0(b *testing.B) { benchPrefill(b, bench12Model(b, "TQ2_0")) }

// BenchmarkSherryKernelCycles times the kernels alone on cache-resident
// data (64 rows of 2560: 100 KB of Sherry, one core) as the minimum over
// many short rounds, which preemption on a shared machine can only
// lengthen: ns per 256 weights and token for Sherry's rows and rows4 and
// for the I2/I2x4 kernels the load repacks it for (rows; dot4x4 for four
// tokens, where the table has it).
func BenchmarkSherryKernelCycles(b *testing.B) {
	const rows, k = 64, 2560
	rng := rand.New(rand.NewPCG(3, 3))
	kern := hostKernels(b)
	data := make([]byte, rows*k*5/32) // every 5-bit code is a valid group
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	scales := make([]float32, rows)
	mem := &arena{}
	defer mem.Close()
	i2 := repack(newTernary("sherry", data, rows, k, scales), mem, kern.hasI2x4())
	a := newActs(kern, rng, 4, k)
	a.quantize()
	out, sums := make([]float32, rows), make([]int32, 4*rows)
	sk, ik := &kern.tern[typeSherry], &kern.tern[i2.typ]
	units := float64(rows * k / 256)
	for _, c := range []struct {
		name   string
		have   bool
		tokens float64
		f      func()
	}{
		{"sherry-rows", sk.rows != nil, 1, func() { sk.rows(data, a.q[:k], a.total[0], a.scale[0], scales, out) }},
		{"sherry-rows4", sk.rows4 != nil, 4, func() { sk.rows4(data, a.q, k, a.total, sums) }},
		{i2.kind + "-rows", ik.rows != nil, 1, func() { ik.rows(i2.data, a.i2q()[:k], a.total[0], a.scale[0], scales, out) }},
		{i2.kind + "-dot4x4", ik.dot4x4 != nil, 4, func() {
			for g := 0; g < rows; g += 4 {
				ik.dot4x4(i2.data[g*i2.rowBytes:(g+4)*i2.rowBytes], a.i2q(), k, a.total, (*[16]int32)(sums[:16]))
			}
		}},
	} {
		if !c.have {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			best := time.Duration(1 << 62)
			for range b.N {
				start := time.Now()
				for range 50 {
					c.f()
				}
				best = min(best, time.Since(start))
			}
			b.ReportMetric(float64(best.Nanoseconds())/50/units/c.tokens, "ns/unit-token")
		})
	}
}

// benchAlternate decodes with several models in one process, in rounds of
// decodeSteps tokens taken in turn, and reports each model's median tok/s
// and the median over rounds of its tok/s over the first model's: on a
// shared machine the neighbours' load changes within seconds, so only
// rounds taken side by side compare. Each model is loaded with its head
// form (EDGECTL_HEAD) and, where native is set, EDGECTL_NATIVE_PACKING=1.
func benchAlternate(b *testing.B, runs []benchRun) {
	ctx := context.Background()
	states := make([]*state, len(runs))
	for i, r := range runs {
		b.Setenv("EDGECTL_HEAD", r.head)
		b.Setenv("EDGECTL_NATIVE_PACKING", map[bool]string{true: "1", false: ""}[r.native])
		em, err := New().Load(ctx, benchRunModel(b, r.format), engine.LoadOptions{Threads: benchThreads, ContextLength: 512})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { em.Close() })
		states[i] = newState(em.(*model))
		if _, err := states[i].forward(ctx, []int{1, 2, 3, 4}); err != nil {
			b.Fatal(err)
		}
	}
	tps := make([][]float64, len(runs))
	ratios := make([][]float64, len(runs))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		round := make([]float64, len(runs))
		for k, st := range states {
			start := time.Now()
			for j := range decodeSteps {
				if st.pos >= 256 {
					st.truncate(4)
				}
				if _, err := st.forward(ctx, []int{((i*decodeSteps + j) * 7919) % st.m.arch.vocab}); err != nil {
					b.Fatal(err)
				}
			}
			round[k] = decodeSteps / time.Since(start).Seconds()
			tps[k] = append(tps[k], round[k])
		}
		for k := range runs {
			ratios[k] = append(ratios[k], round[k]/round[0])
		}
	}
	b.StopTimer()
	for k, r := range runs {
		w, _ := states[k].m.DecodeBytes(0)
		b.ReportMetric(median(tps[k]), r.name+"-tok/s")
		b.ReportMetric(float64(w)/1e6, r.name+"-MB/token")
		if k > 0 {
			b.ReportMetric(median(ratios[k]), r.name+"/"+runs[0].name)
		}
	}
	b.Logf("kernels %s, %d threads, load average %s", states[0].m.kern.name, benchThreads, loadAvg())
}

type benchRun struct {
	name, format, head string
	native             bool // EDGECTL_NATIVE_PACKING=1
}

// BenchmarkSherryVsTQ2 is issue 21's comparison on the 12-layer model:
// TQ2_0 (I2x4), the Sherry .h1b as the load places it by default (I2x4
// too) and as stored (native kernels), with the int8 head, then TQ2_0 and
// native Sherry with the 4-bit head, alternating.
func BenchmarkSherryVsTQ2(b *testing.B) {
	benchAlternate(b, []benchRun{
		{"tq2-q8", "TQ2_0", "q8", false}, {"sherry-q8", "sherry", "q8", false}, {"native-q8", "sherry", "q8", true},
		{"tq2-q4", "TQ2_0", "q4", false}, {"native-q4", "sherry", "q4", true},
	})
}
