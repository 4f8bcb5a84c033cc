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
// GELU in its exact (erf) form. Several inputs run as one pack
// (bert_pack.go), each attending only to its own tokens: no padding, no
// mask, every position a real token.

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
// weights, threads and lifetime, with encoder-only behaviour. packTokens
// is its pack budget (embedPackTokens; tests set smaller ones).
type bertModel struct {
	m          *model
	packTokens int
}

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
	return embedBatch(ctx, m.info.Name, m.tok, m.arch.ctx, m.arch.vocab, m.pooling, req, b.packTokens, b.embedPack)
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
