package cpu

import (
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the calling thread's CPU time (Linux RUSAGE_THREAD; ok is
// false elsewhere). Locked to its thread, a single-core benchmark timed
// by it measures the kernel rather than its share of a shared machine.
func threadCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(1, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// cyclesPerSecond estimates the core clock from a chain of dependent
// float64 additions, 3 cycles each on AMD Zen (4 on Intel since Skylake:
// there it reads 4/3 high), the fastest of many short rounds (a busy
// machine only slows a round), so GFLOP/s can be read as FLOP per cycle:
// Zen 4's FMA peak is 32 (two 256-bit FMA pipes; a 512-bit FMA takes
// both), Zen 3's and Haswell's too.
func cyclesPerSecond() float64 {
	const n = 1 << 18
	best := time.Duration(1 << 62)
	f, g := 1.0, 1.0000001
	for range 100 {
		start := time.Now()
		for range n {
			f += g
		}
		best = min(best, time.Since(start))
	}
	if f == 0 { // keep f alive
		best++
	}
	return 3 * n / best.Seconds()
}

// benchGemm times one dtype's product of a rows × k matrix by n tokens on
// one core, through floatRows.mul with the table kern: GFLOP/s (2·rows·k·n
// per product, on the thread's CPU time) and FLOP per cycle at the
// estimated clock.
func benchGemm(b *testing.B, kern *kernels, dt string, rows, k, n int) {
	rng := rand.New(rand.NewPCG(7, 7))
	c := newGemmCase(rng, rows, k, 1, rows)
	raw := map[string][]byte{"F16": c.w16, "BF16": c.wb16}[dt]
	if dt == "F32" {
		raw = make([]byte, 4*len(c.w32))
		copy(viewF32(raw, len(c.w32)), c.w32)
	}
	m, err := newFloatRows(raw, dt, rows, k)
	if err != nil {
		b.Fatal(err)
	}
	a := newActs(kern, rng, n, k)
	out := make([]float32, n*rows)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hz := cyclesPerSecond()
	b.ResetTimer()
	c0, ok := threadCPU()
	for range b.N {
		m.mul(out, rows, a, 0, rows)
	}
	c1, _ := threadCPU()
	el := b.Elapsed().Seconds()
	if ok && c1 > c0 {
		el = (c1 - c0).Seconds()
	}
	flops := 2 * float64(rows*k*n) * float64(b.N) / el
	b.ReportMetric(flops/1e9, "GFLOP/s")
	b.ReportMetric(flops/hz, "FLOP/cycle")
	b.ReportMetric(hz/1e9, "est-GHz")
}

// BenchmarkGemm: an FFN matrix of a 0.5B model (4096 × 1024, F16 8 MiB,
// out of cache as in prefill) by a 64-token prefill chunk, one core, for
// every dtype and table this CPU runs (the AVX2 one on AVX-512 CPUs too);
// "dot" is a table less its gemm kernels, the per-pair dot path prefill
// ran before: "go-dot" the portable table's, "dot" the host's.
func BenchmarkGemm(b *testing.B) {
	type set struct {
		name string
		kern *kernels
	}
	noGemm := func(k *kernels) *kernels { c := *k; c.gemm = floatGemm{}; return &c }
	host := newKernels(detectFeatures())
	sets := []set{{"go-dot", noGemm(newKernels(cpuFeatures{}))}, {"dot", noGemm(host)}}
	for _, k := range kernelSets() {
		if k.name != "avx512vnni" && k.name != "neon-dotprod" { // the same gemm as avx512, neon
			sets = append(sets, set{k.name, k})
		}
	}
	for _, dt := range gemmDtypes {
		for _, s := range sets {
			b.Run(dt+"/"+s.name, func(b *testing.B) {
				b.Logf("load average %s", loadAvg())
				benchGemm(b, s.kern, dt, 4096, 1024, 64)
			})
		}
	}
}

// BenchmarkPrefillF16GemmVsDot prefills 64 tokens of the generated F16
// llama (quantBenchModel) in alternating rounds with the host table and
// with the same table less its gemm kernels (the per-pair dot path that
// prefill ran before), so the two rates and their ratio come from the
// same minutes of a shared machine. ns/op is one round of both. The
// absolute rates run below BenchmarkPrefillLlamaF16's (gemm alone); the
// speedup is the number to read.
func BenchmarkPrefillF16GemmVsDot(b *testing.B) {
	m := loadBench(b, quantBenchModel(b, "F16"))
	dotKern := *m.kern
	dotKern.gemm = floatGemm{}
	gemm, dot := newState(m), newState(m)
	dot.a.kern, dot.b.kern = &dotKern, &dotKern
	prompt := make([]int, 64)
	for i := range prompt {
		prompt[i] = (i*104729 + 11) % m.arch.vocab
	}
	round := func(st *state) time.Duration {
		st.truncate(0)
		start := time.Now()
		if _, err := st.forward(b.Context(), prompt); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	round(gemm) // warm up: page in the weights
	var tg, td time.Duration
	var ratios []float64
	b.ResetTimer()
	for i := range b.N {
		// Which goes first alternates: a round runs slower after the
		// other path's (measured up to 20%), so each sees that equally.
		var g, d time.Duration
		if i%2 == 0 {
			g, d = round(gemm), round(dot)
		} else {
			d, g = round(dot), round(gemm)
		}
		tg, td = tg+g, td+d
		ratios = append(ratios, d.Seconds()/g.Seconds())
	}
	n := float64(b.N * len(prompt))
	b.ReportMetric(n/tg.Seconds(), "gemm-tok/s")
	b.ReportMetric(n/td.Seconds(), "dot-tok/s")
	b.ReportMetric(median(ratios), "speedup")
	b.Logf("kernels %s, %d threads, load average %s", m.kern.name, benchThreads, loadAvg())
}
