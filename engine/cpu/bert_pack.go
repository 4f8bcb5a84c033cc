package cpu

import (
	"context"
	"math"
)

// Packed encoder forwards. RAG indexing sends many short inputs at once
// (32–256 chunks of 16–128 tokens); run one by one, every input streams
// all the weights for a handful of token rows, too few for the GEMM
// kernels (gemm.go) to reuse each weight load. A pack puts several inputs' tokens in one
// forward, as llama.cpp's server runs them as sequences of one batch: the
// dense products (QKV, output, FFN) run over all of the pack's rows,
// while attention stays inside each input (block-diagonal: an input
// attends only to its own tokens, its positions start at 0) — no padding
// and no mask.
//
// A vector does not depend on the pack around it, bit for bit: everything
// but the products works token by token (embeddings, LayerNorm, GELU) or
// input by input (attention, pooling), and the products run in slabs whose
// results do not depend on which tokens share them (packSlabs).

// embedPackTokens is the token budget of a pack (embedBatch's rule: inputs
// join a pack while their tokens total at most this; a longer input, up to
// the context, is a pack of its own). Activations are ~(6·hidden + ffn)
// floats a token: 15 MB for a MiniLM pack of 1024 tokens, 50 MB for a
// BERT-large one. On MiniLM 1024 beat 512 and 2048 (whose activations
// crowd the weights out of a 32 MiB L3); docs/engine.md has the numbers.
const embedPackTokens = 1024

// bertPack is a pack's layout: input i is rows start[i] … start[i+1]−1 of
// every activation matrix.
type bertPack struct {
	start   []int
	longest int
	slabs   map[int][]slab // by K, for packSlabs
}

// slab is rows [lo, lo+n) of a pack, multiplied in one GEMM call.
type slab struct{ lo, n int }

func newBertPack(pack [][]int) *bertPack {
	p := &bertPack{start: make([]int, len(pack)+1), slabs: map[int][]slab{}}
	for i, ids := range pack {
		p.start[i+1] = p.start[i] + len(ids)
		p.longest = max(p.longest, len(ids))
	}
	return p
}

func (p *bertPack) rows() int { return p.start[len(p.start)-1] }

// packSlabs splits the pack's rows into the GEMM calls of a product over
// K inputs, so that a row's result is the one its input gets alone. The
// SIMD float GEMM splits K into passes by how many rows a call holds
// (gemmPass: partial sums added in another order), and a call of one row
// takes the dot kernels instead. So a call holds at most gemmOnePassActs/(4K)
// rows (one pass, whatever the pack), an input of one token is a call of
// its own, and the runs between are split evenly, which leaves no call of
// one row when at least four fit.
func (p *bertPack) packSlabs(k int) []slab {
	if s, ok := p.slabs[k]; ok {
		return s
	}
	most := max(4, gemmOnePassActs/(4*max(k, 1)))
	var out []slab
	run := func(lo, hi int) {
		if hi <= lo {
			return
		}
		c := (hi - lo + most - 1) / most
		for j := range c {
			a, b := lo+(hi-lo)*j/c, lo+(hi-lo)*(j+1)/c
			out = append(out, slab{a, b - a})
		}
	}
	from := 0
	for i := 0; i+1 < len(p.start); i++ {
		if p.start[i+1]-p.start[i] == 1 {
			run(from, p.start[i])
			out = append(out, slab{p.start[i], 1})
			from = p.start[i+1]
		}
	}
	run(from, p.rows())
	p.slabs[k] = out
	return out
}

// embedPack runs a pack through the encoder and pools each input's rows
// of the last layer.
func (b *bertModel) embedPack(ctx context.Context, pack [][]int) ([][]float32, error) {
	m, ar, enc := b.m, &b.m.arch, b.m.enc
	p := newBertPack(pack)
	n, H, F := p.rows(), ar.hidden, ar.ffn
	x := make([]float32, n*H)
	row := make([]float32, H)
	for i, ids := range pack {
		for t, id := range ids {
			xt := x[(p.start[i]+t)*H : (p.start[i]+t+1)*H]
			m.w.embed.row(id, xt)
			enc.pos.row(t, row) // positions restart at each input
			addTo(xt, row)
			enc.typ.row(0, row) // one segment: token type 0
			addTo(xt, row)
			layerNorm(xt, enc.normW, enc.normB, ar.eps)
		}
	}
	q, k, v := make([]float32, n*H), make([]float32, n*H), make([]float32, n*H)
	att, out, h := make([]float32, n*H), make([]float32, n*H), make([]float32, n*F)
	a := &acts{kern: m.kern}
	scratch := attnScratch(max(1, m.pool.n), p.longest, ar.headDim)
	rows := func(f func(lo, hi int)) { m.pool.parallel(n, 8, f) }
	for l := range enc.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		L := &enc.layers[l]
		b.products(a, p, x, H, []output{{q, H}, {k, H}, {v, H}}, L.q, L.k, L.v)
		rows(func(lo, hi int) {
			addBias(q[lo*H:hi*H], L.qb, hi-lo)
			addBias(k[lo*H:hi*H], L.kb, hi-lo)
			addBias(v[lo*H:hi*H], L.vb, hi-lo)
		})
		b.attend(att, q, k, v, p, scratch)
		b.products(a, p, att, H, []output{{out, H}}, L.o)
		rows(func(lo, hi int) { b.biasResidualNorm(x, out, L.ob, L.attnNormW, L.attnNormB, lo, hi) })
		b.products(a, p, x, H, []output{{h, F}}, L.up)
		rows(func(lo, hi int) {
			addBias(h[lo*F:hi*F], L.upb, hi-lo)
			for t := lo; t < hi; t++ { // row by row: the exp kernel's tail is a row's own
				geluErfRows(m.kern, h[t*F:(t+1)*F])
			}
		})
		b.products(a, p, h, F, []output{{out, H}}, L.down)
		rows(func(lo, hi int) { b.biasResidualNorm(x, out, L.downb, L.outNormW, L.outNormB, lo, hi) })
	}
	vs := make([][]float32, len(pack))
	for i := range pack {
		s0, s1 := p.start[i], p.start[i+1]
		pl := newPooler(m.pooling.rule, H, s1-s0)
		for t := range s1 - s0 {
			pl.add(t, x[(s0+t)*H:(s0+t+1)*H])
		}
		vs[i] = pl.vector()
	}
	return vs, nil
}

// products computes outs[i] = ws[i]·in for every row of the pack (in has
// k columns), slab by slab (packSlabs), all matrices of a slab in one
// dispatch.
func (b *bertModel) products(a *acts, p *bertPack, in []float32, k int, outs []output, ws ...linear) {
	var at [3]output
	for _, s := range p.packSlabs(k) {
		a.reset(s.n, k)
		copy(a.f, in[s.lo*k:(s.lo+s.n)*k])
		o := at[:0]
		for _, w := range outs {
			o = append(o, output{w.buf[s.lo*w.ld:], w.ld})
		}
		b.m.matmulN(a, o, ws...)
	}
}

// biasResidualNorm is x = LayerNorm(x + out + ob) at rows [lo, hi).
func (b *bertModel) biasResidualNorm(x, out, ob, w, bias []float32, lo, hi int) {
	H := b.m.arch.hidden
	addBias(out[lo*H:hi*H], ob, hi-lo)
	for t := lo; t < hi; t++ {
		xt := x[t*H : (t+1)*H]
		addTo(xt, out[t*H:(t+1)*H])
		layerNorm(xt, w, bias, b.m.arch.eps)
	}
}

// attnQueries is how many queries' scores attend holds at once: memory
// linear in the input's length, whatever the context.
const attnQueries = 128

// attnScratch is attend's working memory, one buffer for each of threads
// jobs running at once (the pool runs at most that many): a head's
// queries, keys and values and the scores of attnQueries of them, for an
// input of up to longest tokens.
func attnScratch(threads, longest, hd int) chan []float32 {
	c := make(chan []float32, threads)
	for range threads {
		c <- make([]float32, 3*longest*hd+min(longest, attnQueries)*longest)
	}
	return c
}

// attend is bidirectional multi-head attention inside each input of the
// pack: a query row attends to every row of its own input and no other.
// Each (input, head) is one job on a core, two small products on the
// float GEMM kernels: the scores Q·Kᵀ, a softmax per query, then the
// scores times V (one dot and one axpy call per query and key pair spent
// a quarter of a 128-token MiniLM embedding in call overhead).
func (b *bertModel) attend(dst, q, k, v []float32, p *bertPack, scratch chan []float32) {
	ar, kern := &b.m.arch, b.m.kern
	H, hd, heads, L := ar.hidden, ar.headDim, ar.heads, p.longest
	scale := float32(1 / math.Sqrt(float64(hd)))
	gemm := kern.gemm.f32
	if gemm == nil {
		gemm = portableGemm.f32
	}
	b.m.pool.parallel((len(p.start)-1)*heads, 1, func(lo, hi int) {
		w := <-scratch
		defer func() { scratch <- w }()
		qh, kh, vt, sc := w[:L*hd], w[L*hd:2*L*hd], w[2*L*hd:3*L*hd], w[3*L*hd:]
		for job := lo; job < hi; job++ {
			i, h := job/heads, job%heads
			s0, n := p.start[i], p.start[i+1]-p.start[i]
			for t := range n {
				r := (s0+t)*H + h*hd
				copy(qh[t*hd:(t+1)*hd], q[r:r+hd])
				copy(kh[t*hd:(t+1)*hd], k[r:r+hd])
				for d, x := range v[r : r+hd] {
					vt[d*n+t] = x // Vᵀ: one row of keys per dimension
				}
			}
			for t0 := 0; t0 < n; t0 += attnQueries {
				nq := min(attnQueries, n-t0)
				s := sc[:nq*n]
				gemm(kh[:n*hd], hd, qh[t0*hd:(t0+nq)*hd], nq, s, n) // s[t·n + j] = q_t·k_j
				for t := range nq {
					row := s[t*n : (t+1)*n]
					for j := range row {
						row[j] *= scale
					}
					inv := 1 / kern.expSubSum(row, kern.maxF32(row))
					for j := range row {
						row[j] *= inv
					}
				}
				gemm(vt[:hd*n], n, s, nq, dst[(s0+t0)*H+h*hd:], H) // row t's head h = Σ_j s[t·n + j]·v_j
			}
		}
	})
}
