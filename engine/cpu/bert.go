package cpu

import (
	"context"
	"fmt"
	"math"

	"github.com/edgectl/edgectl/engine"
)

// BERT-family encoders (BertModel: all-MiniLM-L6-v2, bge-small, e5-small;
// GGUF arch "bert"): they embed and cannot generate. The forward pass is
// the published one (Devlin et al. 2018, transformers' BertModel): word +
// position + token-type embeddings, a LayerNorm, then post-LayerNorm
// blocks — x = LN(x + Attn(x)), x = LN(x + W2·GELU(W1·x)) — with biases on
// every product, bidirectional attention over the input's own tokens, and
// GELU in its exact (erf) form. Each input runs alone, so no padding and
// no mask: every position is a real token.

// encoder holds what a BERT model has beyond the decoder's model struct
// (whose pool, kernels, tokenizer, memory and lifetime it shares).
type encoder struct {
	pos, typ     *floatRows // position and token-type tables (word is model.w.embed)
	normW, normB []float32  // the embedding LayerNorm
	layers       []bertLayer
}

// bertLayer is one post-LayerNorm block.
type bertLayer struct {
	q, k, v, o, up, down       linear
	qb, kb, vb, ob, upb, downb []float32
	attnNormW, attnNormB       []float32
	outNormW, outNormB         []float32
}

// bertModel is the engine.Model of an encoder: the decoder's model for
// weights, threads and lifetime, with encoder-only behaviour.
type bertModel struct{ m *model }

var (
	_ engine.Model    = (*bertModel)(nil)
	_ engine.Embedder = (*bertModel)(nil)
)

func (b *bertModel) Info() engine.ModelInfo { return b.m.info }
func (b *bertModel) Close() error           { return b.m.Close() }

// NewSession refuses: an encoder has no language-model head to generate
// with (serve answers 400 with this).
func (b *bertModel) NewSession() (engine.Session, error) {
	return nil, fmt.Errorf("%w: %s only embeds (a %s encoder has no language-model head to generate with): send it to /v1/embeddings or /api/embed, or `edgectl embed`",
		engine.ErrInvalidRequest, b.m.info.Name, b.m.arch.name)
}

// Embed implements engine.Embedder.
func (b *bertModel) Embed(ctx context.Context, req engine.EmbedRequest) (engine.EmbedResult, error) {
	m := b.m
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return engine.EmbedResult{}, errModelClosed
	}
	return embedBatch(ctx, m.info.Name, m.tok, m.arch.ctx, m.arch.vocab, m.pooling, req, b.embedIDs)
}

// embedIDs runs one input through the encoder and pools its last layer.
func (b *bertModel) embedIDs(ctx context.Context, ids []int) ([]float32, error) {
	m, ar, enc := b.m, &b.m.arch, b.m.enc
	n, H, F := len(ids), ar.hidden, ar.ffn
	x := make([]float32, n*H)
	row := make([]float32, H)
	for t, id := range ids {
		xt := x[t*H : (t+1)*H]
		m.w.embed.row(id, xt)
		enc.pos.row(t, row)
		addTo(xt, row)
		enc.typ.row(0, row) // one segment: token type 0
		addTo(xt, row)
		layerNorm(xt, enc.normW, enc.normB, ar.eps)
	}
	q, k, v := make([]float32, n*H), make([]float32, n*H), make([]float32, n*H)
	att, out, h := make([]float32, n*H), make([]float32, n*H), make([]float32, n*F)
	a := &acts{kern: m.kern}
	for l := range enc.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		L := &enc.layers[l]
		a.reset(n, H)
		copy(a.f, x)
		m.matmulN(a, []output{{q, H}, {k, H}, {v, H}}, L.q, L.k, L.v)
		addBias(q, L.qb, n)
		addBias(k, L.kb, n)
		addBias(v, L.vb, n)
		b.attend(att, q, k, v, n)
		b.dense(a, out, att, L.o, L.ob, n)
		b.residualNorm(x, out, L.attnNormW, L.attnNormB, n)
		b.dense(a, h, x, L.up, L.upb, n)
		m.pool.parallel(n*F, 256, func(lo, hi int) { geluErfRows(m.kern, h[lo:hi]) })
		b.dense(a, out, h, L.down, L.downb, n)
		b.residualNorm(x, out, L.outNormW, L.outNormB, n)
	}
	p := newPooler(m.pooling.rule, H, n)
	for t := range n {
		p.add(t, x[t*H:(t+1)*H])
	}
	return p.vector(), nil
}

// dense is out = W·in + bias for each of n positions.
func (b *bertModel) dense(a *acts, out, in []float32, w linear, bias []float32, n int) {
	a.reset(n, w.cols())
	copy(a.f, in)
	b.m.matmul(out, w, a)
	addBias(out, bias, n)
}

// residualNorm is x = LayerNorm(x + out) at each of n positions.
func (b *bertModel) residualNorm(x, out, w, bias []float32, n int) {
	H := b.m.arch.hidden
	for t := range n {
		xt := x[t*H : (t+1)*H]
		addTo(xt, out[t*H:(t+1)*H])
		layerNorm(xt, w, bias, b.m.arch.eps)
	}
}

// attend is bidirectional multi-head attention: each query position
// attends to every position of the input, split across cores by (head,
// query) pairs, on the decoder's dot, softmax and axpy kernels.
func (b *bertModel) attend(dst, q, k, v []float32, n int) {
	ar, kern := &b.m.arch, b.m.kern
	H, hd := ar.hidden, ar.headDim
	scale := float32(1 / math.Sqrt(float64(hd)))
	b.m.pool.parallel(ar.heads*n, 1, func(lo, hi int) {
		sc := make([]float32, n)
		for job := lo; job < hi; job++ {
			h, t := job/n, job%n
			qt := q[t*H+h*hd : t*H+(h+1)*hd]
			for p := range n {
				sc[p] = kern.dotF32(qt, k[p*H+h*hd:p*H+(h+1)*hd]) * scale
			}
			sum := kern.expSubSum(sc, kern.maxF32(sc))
			o := dst[t*H+h*hd : t*H+(h+1)*hd]
			clear(o)
			for p := range n {
				kern.axpyF32(sc[p]/sum, v[p*H+h*hd:p*H+(h+1)*hd], o)
			}
		}
	})
}

func addTo(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += x[i]
	}
}

// layerNorm is LayerNorm in place: (x − mean)/√(var + eps)·w + b, the
// moments in float64.
func layerNorm(x, w, b []float32, eps float32) {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	mean := s / float64(len(x))
	var ss float64
	for _, v := range x {
		d := float64(v) - mean
		ss += d * d
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	for i, v := range x {
		x[i] = float32((float64(v)-mean)*inv)*w[i] + b[i]
	}
}

// geluErf is GELU in its exact form, x·Φ(x) = x/2·(1 + erf(x/√2))
// (BERT's hidden_act "gelu"), with erf from Abramowitz & Stegun 7.1.26
// (absolute error ≤ 1.5e-7, below float32's resolution of the result).
// e is e^(−x²/2), which geluErfRows computes with the SIMD exp kernel:
// math.Erf, then math.Exp, took a fifth of MiniLM's time.
func geluErf(x, e float32) float32 {
	az := math.Abs(float64(x)) / math.Sqrt2
	t := 1 / (1 + 0.3275911*az)
	y := 1 - (((((1.061405429*t-1.453152027)*t)+1.421413741)*t-0.284496736)*t+0.254829592)*t*float64(e)
	if x < 0 {
		y = -y
	}
	return float32(0.5 * float64(x) * (1 + y))
}

// geluErfRows applies geluErf to x in place, 256 values at a time.
func geluErfRows(kern *kernels, x []float32) {
	var e [256]float32
	for len(x) > 0 {
		c := x[:min(len(x), len(e))]
		for i, v := range c {
			e[i] = -v * v / 2
		}
		kern.expSubSum(e[:len(c)], 0)
		for i, v := range c {
			c[i] = geluErf(v, e[i])
		}
		x = x[len(c):]
	}
}
