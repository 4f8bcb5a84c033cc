//go:build !purego

package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/gguf"
)

// BenchmarkVNNIQuantCycles times each VNNI one-token kernel against the
// AVX2 one it replaces on one core, over 256 rows of 2560 (BitNet-2B's
// hidden size: the LM head's rows) that stay in L2, in ns a super-block:
// the kernels' arithmetic, apart from memory.
func BenchmarkVNNIQuantCycles(b *testing.B) {
	f := detectFeatures()
	if !f.avx2 || !f.avx512 || !f.vnni || !f.vbmi {
		b.Skip("no AVX-512 VNNI, VBMI and GFNI on this CPU")
	}
	const rows, k = 256, 2560
	avx2 := newKernels(cpuFeatures{avx2: true})
	rng := rand.New(rand.NewPCG(7, 7))
	for _, c := range vnniQuantCases() {
		x := make([]float32, k)
		var w []byte
		for range rows {
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			q, err := gguf.Quantize(c.typ, x)
			if err != nil {
				b.Fatal(err)
			}
			w = append(w, q...)
		}
		a := newActs(avx2, rng, 1, k)
		a.quantizeBlocks(formQ8_K)
		xb := withNibbles(a.blockRow(formQ8_K, 0))
		out := make([]float32, rows)
		for name, kern := range map[string]func([]byte, q8Blocks, []float32){
			"avx2": avx2.quant[c.qt].rows,
			"vnni": c.rows,
		} {
			b.Run(c.typ.String()+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					kern(w, xb, out)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*k/256), "ns/superblock")
			})
		}
	}
}

// BenchmarkVNNIQuantHead multiplies BitNet-2B's LM head as q4x's Q4_K
// sketch (128256 × 2560, 185 MB, from memory) on benchThreads cores with
// the AVX2 and the VNNI Q4_K kernel in turn, 16 rounds, and reports each
// one's median GB/s and the median read rate probed over the same bytes
// right before each round: the ratio to it says which of the kernel and
// the memory sets the pace in the memory's present state.
func BenchmarkVNNIQuantHead(b *testing.B) {
	f := detectFeatures()
	if !f.avx2 || !f.avx512 || !f.vnni || !f.vbmi {
		b.Skip("no AVX-512 VNNI, VBMI and GFNI on this CPU")
	}
	mem := &arena{}
	defer mem.Close()
	l := compactHead(benchHeadRows(b), "q4", mem)
	q, ok := l.(*quantLinear)
	if !ok {
		b.Fatalf("the q4 head is a %T, not a Q4_K matrix", l)
	}
	kern := hostKernels(b)
	m := &model{pool: newPool(benchThreads), kern: kern}
	defer m.pool.close()
	forms := map[string]func([]byte, q8Blocks, []float32){
		"avx2": superBlockRows(rowsQ4KAVX2, 144),
		"vnni": nibbleRows(rowsQ4KVNNI, 144),
	}
	a := newActs(kern, rand.New(rand.NewPCG(1, 1)), 1, q.c)
	out := make([]float32, q.r)
	rate := map[string][]float64{}
	b.SetBytes(q.size())
	for b.Loop() {
		rate = map[string][]float64{}
		for round := range 16 {
			rate["read"] = append(rate["read"], readRate(kern.readSum, [][]byte{q.raw}, benchThreads)/1e9)
			for i, name := range []string{"avx2", "vnni"} {
				name = []string{"avx2", "vnni"}[(i+round)%2] // which runs first alternates
				kern.quant[typeQ4K].rows = forms[name]
				a.reset(1, q.c)
				start := time.Now()
				m.matmul(out, q, a)
				rate[name] = append(rate[name], float64(q.size())/time.Since(start).Seconds()/1e9)
			}
		}
	}
	for name, r := range rate {
		slices.Sort(r)
		b.ReportMetric(r[len(r)/2], name+"-GB/s")
	}
}
