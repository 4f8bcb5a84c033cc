package cpu

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"
)

// BenchmarkHead4xRescore loads the generated BitNet-2B TQ2_0 file with the
// q4x head and, per op, decodes one token with the plain 4-bit head, times
// the re-scoring of its K candidates against the F16 file rows (µs a
// token: the top-K pass over 128256 logits and K dot products), and
// computes the full float head's logits to find where the float argmax
// ranks among the 4-bit logits. The tokens fed are the float head's
// argmaxes (its greedy text) from a prompt of four ids. One sub-benchmark
// per K, each on a fresh load (the rows' pages start unmapped, as after
// a load).
func BenchmarkHead4xRescore(b *testing.B) {
	b.Setenv("EDGECTL_HEAD", "q4x")
	for _, k := range []int{16, 32, 64} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) { benchRescore(b, k) })
	}
}

func benchRescore(b *testing.B, k int) {
	m := loadBench(b, "TQ2_0")
	ex := m.w.exact
	if ex == nil {
		b.Fatal("no exact candidates: is the head q4x?")
	}
	ex.k = k
	st := newState(m)
	ctx := context.Background()
	lf := make([]float32, m.arch.vocab)
	var ranks []int
	var rescore time.Duration
	next := []int{1, 2, 3, 4}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if st.pos >= 256 {
			st.truncate(0)
			next = []int{1, 2, 3, 4}
		}
		m.w.exact = nil // plain 4-bit logits
		l4, err := st.forward(ctx, next)
		m.w.exact = ex
		if err != nil {
			b.Fatal(err)
		}
		l4 = slices.Clone(l4)
		lx := slices.Clone(l4)
		start := time.Now()
		ex.rescore(st.a.kern, lx, st.a.f[:m.arch.hidden])
		rescore += time.Since(start)
		a := acts{kern: st.a.kern}
		a.reset(1, m.arch.hidden)
		copy(a.f, st.a.f[:m.arch.hidden])
		m.matmul(lf, ex.f, &a)
		top := argmax32(lf)
		ranks = append(ranks, rankOf(l4, top))
		if argmax32(lx) != top && rankOf(l4, top) < ex.k {
			b.Fatalf("position %d: q4x argmax %d, float head's %d (rank %d in the 4-bit order)", st.pos, argmax32(lx), top, rankOf(l4, top))
		}
		next = []int{top}
	}
	b.StopTimer()
	sort.Ints(ranks)
	b.ReportMetric(float64(rescore.Microseconds())/float64(b.N), "rescore-µs/token")
	b.ReportMetric(float64(ranks[len(ranks)/2]), "median-rank")
	b.ReportMetric(float64(ranks[len(ranks)*99/100]), "p99-rank")
	b.ReportMetric(float64(ranks[len(ranks)-1]), "max-rank")
	b.Logf("K %d, %d positions, load average %s", ex.k, len(ranks), loadAvg())
}
