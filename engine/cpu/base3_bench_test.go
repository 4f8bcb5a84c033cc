package cpu

import (
	"math/rand/v2"
	"testing"
	"time"
)

// benchB3Kernel is benchKernel for a B3 matrix (random bytes) and, for
// comparison in the same process, the I2x4 (or I2) matrix of the same
// shape: one decode product of rows × k weights larger than the caches,
// in GB/s of weight bytes and weights per second.
func benchB3Kernel(b *testing.B, kind string, rows, k int) {
	rng := rand.New(rand.NewPCG(1, 1))
	kern := hostKernels(b)
	if kind == "I2x4" && !kern.hasI2x4() {
		kind = "I2"
	}
	data := make([]byte, rows*rowBytesFor(kind, k))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	l := newTernary(kind, data, rows, k, make([]float32, rows))
	m := &model{pool: newPool(benchThreads), kern: kern}
	defer m.pool.close()
	a := newActs(m.kern, rng, 1, k)
	out := make([]float32, rows)
	b.SetBytes(l.size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.quant = false
		m.matmul(out, l, a)
	}
	b.ReportMetric(float64(rows*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
	b.Logf("kernels %s, load average %s", kern.name, loadAvg())
}

func BenchmarkKernelB3(b *testing.B)       { benchB3Kernel(b, "B3", 6912*24, 2560) }
func BenchmarkKernelB3I2x4(b *testing.B)   { benchB3Kernel(b, "I2x4", 6912*24, 2560) }
func BenchmarkKernelB3Down(b *testing.B)   { benchB3Kernel(b, "B3", 2560*24, 6912) }
func BenchmarkKernelB3I2Down(b *testing.B) { benchB3Kernel(b, "I2x4", 2560*24, 6912) }

// benchRepack times loading one BitNet-2B gate matrix (6912 × 2560) of
// tq1h rows into B3 or, as before, I2x4.
func benchRepack(b *testing.B, toB3 bool) {
	rng := rand.New(rand.NewPCG(1, 1))
	const rows, k = 6912, 2560
	data := make([]byte, rows*rowBytesFor("tq1h", k))
	for i := range data {
		data[i] = byte(rng.IntN(243))
	}
	l := newTernary("tq1h", data, rows, k, make([]float32, rows))
	mem := &arena{}
	defer mem.Close()
	b.SetBytes(int64(len(data)))
	for range b.N {
		if toB3 {
			repackB3(l, mem)
		} else {
			repack(l, mem, true)
		}
	}
}

func BenchmarkRepackB3(b *testing.B) { benchRepack(b, true) }
func BenchmarkRepackI2(b *testing.B) { benchRepack(b, false) }

// BenchmarkDecodeBase3AB decodes the generated BitNet-2B model as TQ2_0
// (I2x4 in memory), TQ1_0 and tq1h (both B3) in alternating rounds of
// decodeSteps tokens in one process, so that the machine's drifting share
// of memory bandwidth hits all three alike. Each round starts with a
// read-bandwidth probe; the ratios to TQ2_0 are reported per round (log)
// and as medians over the rounds below and above 45 GB/s (the 2-core
// Zen 4 VM's two memory states: ~35 and ~55–64 GB/s).
func BenchmarkDecodeBase3AB(b *testing.B) {
	names := []string{"TQ2_0", "TQ1_0", "tq1h"}
	var sts []*state
	for _, n := range names {
		m := loadBench(b, n)
		st := newState(m)
		if _, err := st.forward(b.Context(), []int{1, 2, 3, 4}); err != nil {
			b.Fatal(err)
		}
		sts = append(sts, st)
		w, _ := m.DecodeBytes(0)
		b.Logf("%s: %s layers, %.1f MB/token of weights", n, m.w.layers[0].gate.(*ternLinear).kind, float64(w)/1e6)
	}
	tps := make([][]float64, len(names))
	var slow, fast [][2]float64 // per-round TQ1_0, tq1h ratios to TQ2_0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		bw := readBandwidth(sts[0].m, benchThreads)
		b.StartTimer()
		var round []float64
		for _, st := range sts {
			start := time.Now()
			for s := range decodeSteps {
				if st.pos >= 256 {
					st.truncate(4)
				}
				if _, err := st.forward(b.Context(), []int{((i*decodeSteps + s) * 7919) % st.m.arch.vocab}); err != nil {
					b.Fatal(err)
				}
			}
			round = append(round, decodeSteps/time.Since(start).Seconds())
		}
		for j := range names {
			tps[j] = append(tps[j], round[j])
		}
		r := [2]float64{round[1] / round[0], round[2] / round[0]}
		if bw < 45e9 {
			slow = append(slow, r)
		} else {
			fast = append(fast, r)
		}
		b.Logf("round %d: %.1f GB/s, tok/s %.1f %.1f %.1f, ratios %.3f %.3f", i, bw/1e9, round[0], round[1], round[2], r[0], r[1])
	}
	b.StopTimer()
	for j, n := range names {
		b.ReportMetric(median(tps[j]), n+"-tok/s")
	}
	for _, set := range []struct {
		name   string
		ratios [][2]float64
	}{{"<45GB/s", slow}, {">=45GB/s", fast}} {
		if len(set.ratios) == 0 {
			continue
		}
		var a, c []float64
		for _, r := range set.ratios {
			a, c = append(a, r[0]), append(c, r[1])
		}
		b.ReportMetric(median(a), "TQ1_0/TQ2_0"+set.name)
		b.ReportMetric(median(c), "tq1h/TQ2_0"+set.name)
		b.ReportMetric(float64(len(a)), "rounds"+set.name)
	}
	b.Logf("kernels %s, load average %s", sts[0].m.kern.name, loadAvg())
}
