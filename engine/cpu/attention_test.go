package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttentionMatchesFloat64 checks attention against a plain float64
// softmax over the cache: decode with one span and with several (the
// merge of partial softmaxes), and a batch long enough for several
// blocks per task; headDim 128 (the SIMD kernels) and 16 (portable),
// groups of 4 query heads per KV head (the grouped kernels) and 3; with
// every kernel table this CPU runs.
func TestAttentionMatchesFloat64(t *testing.T) {
	for _, kern := range kernelSets() {
		t.Run(kern.name, func(t *testing.T) { testAttentionMatchesFloat64(t, kern) })
	}
}

func testAttentionMatchesFloat64(t *testing.T, kern *kernels) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, g := range []struct{ hd, heads int }{{128, 8}, {128, 6}, {16, 8}} {
		hd := g.hd
		for _, c := range []struct{ pos, n int }{
			{0, 1}, {40, 1}, {63, 1}, {64, 1}, {200, 1}, {600, 1}, {1500, 1}, // decode: 1 span up to 511 positions, then 2 and 5
			{0, 5}, {700, 3}, // batch: one span per task, 2 blocks at 700+
		} {
			ar := arch{layers: 2, heads: g.heads, kvHeads: 2, headDim: hd, ctx: 2048}
			m := &model{arch: ar, pool: newPool(2), kern: kern}
			s := newState(m)
			s.reserveKV()
			end := c.pos + c.n
			for i := range s.kc {
				s.kc[i] = float32(rng.NormFloat64())
				s.vc[i] = float32(rng.NormFloat64())
			}
			qd := ar.heads * hd
			s.q = make([]float32, c.n*qd)
			for i := range s.q {
				s.q[i] = 2 * float32(rng.NormFloat64()) // sharp enough that the max matters
			}
			s.att = make([]float32, c.n*qd)
			s.pos = c.pos
			const l = 1
			s.attention(l, c.n)
			group := ar.heads / ar.kvHeads
			var worst float64
			for tk := range c.n {
				for h := range ar.heads {
					run := s.kvRun(l, h/group)
					q := s.q[tk*qd+h*hd : tk*qd+(h+1)*hd]
					n := c.pos + tk + 1
					sc := make([]float64, n)
					mx := math.Inf(-1)
					for p := range n {
						var d float64
						for i := range hd {
							d += float64(q[i]) * float64(s.kc[run+p*hd+i])
						}
						sc[p] = d / math.Sqrt(float64(hd))
						mx = max(mx, sc[p])
					}
					var sum float64
					for p := range sc {
						sc[p] = math.Exp(sc[p] - mx)
						sum += sc[p]
					}
					for i := range hd {
						var want float64
						for p := range n {
							want += sc[p] / sum * float64(s.vc[run+p*hd+i])
						}
						got := float64(s.att[tk*qd+h*hd+i])
						worst = max(worst, math.Abs(got-want))
					}
				}
			}
			if worst > 5e-6 { // float32 rounding measures ~1e-6
				t.Errorf("headDim %d, %d heads, %d cached + %d new (end %d): max abs error %.2g", hd, g.heads, c.pos, c.n, end, worst)
			}
			s.release()
			m.pool.close()
		}
	}
}
