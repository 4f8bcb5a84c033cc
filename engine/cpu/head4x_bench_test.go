package cpu

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkHead4xRescore loads the generated BitNet-2B TQ2_0 file with a
// head with candidates and, per op, decodes one token with its sketch alone, times
// the re-scoring of its K candidates against the F16 file rows (µs a
// token: the top-K pass over 128256 logits and K dot products), and
// computes the full float head's logits to find where the float argmax
// ranks among the 4-bit logits. The tokens fed are the float head's
// argmaxes (its greedy text) from a prompt of four ids. One sub-benchmark
// per K, each on a fresh load (the rows' pages start unmapped, as after
// a load).
//
// Each form with candidates (q4x, q3x, q2x) runs at its own K, half it and
// twice it.
func BenchmarkHead4xRescore(b *testing.B) {
	for _, form := range candidateForms {
		for _, k := range []int{blockHeads[form].k / 2, blockHeads[form].k, 2 * blockHeads[form].k} {
			b.Run(fmt.Sprintf("%s/K=%d", form, k), func(b *testing.B) {
				b.Setenv("EDGECTL_HEAD", form)
				benchRescore(b, min(k, maxCandidates))
			})
		}
	}
}

func benchRescore(b *testing.B, k int) {
	m := loadBench(b, "TQ2_0")
	ex := m.w.exact
	if ex == nil {
		b.Fatal("no exact candidates: is the head q4x, q3x or q2x?")
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
	b.Logf("%s head, K %d, %d positions, load average %s", m.w.head.format(), ex.k, len(ranks), loadAvg())
}

// BenchmarkSherryVsTQ2Heads is BenchmarkSherryVsTQ2 with the heads with
// candidates: TQ2_0 on q4x (the first, the ratios' base) and q2x, Sherry
// repacked (I2x4) on q2x, and Sherry as stored (native kernels) on q2x,
// q3x and q4x, alternating on the 12-layer model of BitNet-2B's width.
func BenchmarkSherryVsTQ2Heads(b *testing.B) {
	benchAlternate(b, []benchRun{
		{"tq2-q4x", "TQ2_0", "q4x", false}, {"tq2-q2x", "TQ2_0", "q2x", false},
		{"sherry-q2x", "sherry", "q2x", false}, {"native-q2x", "sherry", "q2x", true},
		{"native-q3x", "sherry", "q3x", true}, {"native-q4x", "sherry", "q4x", true},
	})
}

// The generated BitNet-2B TQ2_0 file on the 2-bit head with candidates
// (EDGECTL_HEAD=q2x), for scripts/bench-llamacpp.sh's tq2_0-head2.
func BenchmarkDecodeTQ2_0Q2xHead(b *testing.B) {
	b.Setenv("EDGECTL_HEAD", "q2x")
	benchDecode(b, "TQ2_0")
}

func BenchmarkPrefillTQ2_0Q2xHead(b *testing.B) {
	b.Setenv("EDGECTL_HEAD", "q2x")
	benchPrefill(b, "TQ2_0")
}

// benchRunModel is the file of a benchAlternate run's format: the
// 12-layer model's (bench12Model), or with the prefix "2B:" the generated
// BitNet-2B's (benchModel).
func benchRunModel(b *testing.B, format string) string {
	if f, ok := strings.CutPrefix(format, "2B:"); ok {
		return benchModel(b, f)
	}
	return bench12Model(b, format)
}

// BenchmarkHeadsTQ2_0 decodes the generated BitNet-2B TQ2_0 file on the
// heads with candidates, q4x (the ratios' base), q3x and q2x, in
// alternating rounds in one process.
func BenchmarkHeadsTQ2_0(b *testing.B) {
	benchAlternate(b, []benchRun{
		{"q4x", "2B:TQ2_0", "q4x", false}, {"q3x", "2B:TQ2_0", "q3x", false}, {"q2x", "2B:TQ2_0", "q2x", false},
	})
}
