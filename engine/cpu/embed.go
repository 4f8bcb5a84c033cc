package cpu

import (
	"context"
	"fmt"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/tokenizer"
)

// engine.Embedder on decoder checkpoints: the final-norm hidden state of
// every position (no LM head), pooled as the model's files say
// (embed_pooling.go), each input alone in a fresh cache (BERT encoders
// pack several inputs into one forward: bert_pack.go).

var _ engine.Embedder = (*model)(nil)

// embedPack embeds a pack of fitted inputs (token ids within the
// vocabulary and the context), one vector per input, in order.
type embedPack func(ctx context.Context, pack [][]int) ([][]float32, error)

// embedBatch is the loop every CPU model's Embed runs: each input
// tokenized (or taken as ids) and fitted to the context, then embedded in
// packs of consecutive inputs by run; the pooled vector normalised when
// the model's files ask. A pack holds inputs while their tokens total at
// most packTokens; an input longer than that (the context bounds it) is
// a pack of its own, so packTokens ≤ 0 embeds each input alone. Packs run
// one after another: memory follows the largest pack, not the batch.
func embedBatch(ctx context.Context, name string, tok *tokenizer.Tokenizer, ctxLen, vocab int, spec poolSpec,
	req engine.EmbedRequest, packTokens int, run embedPack) (engine.EmbedResult, error) {
	start := time.Now()
	var res engine.EmbedResult
	if spec.err != nil {
		return res, fmt.Errorf("%w: %s cannot embed: %w", engine.ErrInvalidRequest, name, spec.err)
	}
	var pack [][]int
	packed := 0
	flush := func() error {
		if len(pack) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		vs, err := run(ctx, pack)
		if err != nil {
			return err
		}
		for j, v := range vs {
			if spec.normalize {
				if err := engine.NormalizeL2(v); err != nil {
					return err
				}
			}
			res.Embeddings = append(res.Embeddings, v)
			res.Tokens = append(res.Tokens, len(pack[j]))
			res.PromptTokens += len(pack[j])
			if req.Progress != nil {
				req.Progress(len(res.Embeddings))
			}
		}
		pack, packed = pack[:0], 0
		return nil
	}
	for i, in := range req.Inputs {
		ids, err := fitEmbedInput(ctx, name, tok, ctxLen, vocab, req.Truncate, i, in)
		if err != nil {
			return res, err
		}
		if len(pack) > 0 && packed+len(ids) > packTokens {
			if err := flush(); err != nil {
				return res, err
			}
		}
		pack = append(pack, ids)
		packed += len(ids)
	}
	if err := flush(); err != nil {
		return res, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

// fitEmbedInput is input i's token ids: tokenized (or taken as given),
// checked against the vocabulary, and fitted to the context.
func fitEmbedInput(ctx context.Context, name string, tok *tokenizer.Tokenizer, ctxLen, vocab int, truncate bool,
	i int, in engine.EmbedInput) ([]int, error) {
	ids := in.Tokens
	if ids == nil {
		if tok == nil {
			return nil, fmt.Errorf("%w: model %s has no tokenizer (put tokenizer.json beside it), so it embeds token arrays only", engine.ErrInvalidRequest, name)
		}
		var err error
		if ids, err = tok.EncodeContext(ctx, in.Text, true); err != nil {
			return nil, err
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: input %d is empty: nothing to embed (it has no tokens)", engine.ErrInvalidRequest, i)
	}
	for _, id := range ids {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("%w: input %d holds token id %d, outside %s's vocabulary of %d", engine.ErrInvalidRequest, i, id, name, vocab)
		}
	}
	if len(ids) > ctxLen {
		if !truncate {
			return nil, fmt.Errorf("%w: input %d is %d tokens and %s's context is %d tokens; shorten it (or ask for truncation: Ollama's truncate, the default of /api/embed)",
				engine.ErrContextFull, i, len(ids), name, ctxLen)
		}
		ids = truncateIDs(ids, ctxLen, tok)
	}
	return ids, nil
}

// truncateIDs keeps the first n tokens; a final special token (BERT's
// [SEP], an EOS the tokenizer appends) stays last, as transformers'
// truncation keeps the template's tokens.
func truncateIDs(ids []int, n int, tok *tokenizer.Tokenizer) []int {
	last := ids[len(ids)-1]
	if tok != nil && n > 1 && tok.IsSpecial(last) {
		return append(append([]int(nil), ids[:n-1]...), last)
	}
	return ids[:n:n]
}

// Embed implements engine.Embedder.
func (m *model) Embed(ctx context.Context, req engine.EmbedRequest) (engine.EmbedResult, error) {
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return engine.EmbedResult{}, errModelClosed
	}
	return embedBatch(ctx, m.info.Name, m.tok, m.arch.ctx, m.arch.vocab, m.pooling, req, 0, m.embedEach)
}

// embedEach embeds a decoder's pack one input at a time (embedBatch's
// packs of one: the decoder's forward runs one sequence through its
// cache, so inputs are not packed).
func (m *model) embedEach(ctx context.Context, pack [][]int) ([][]float32, error) {
	out := make([][]float32, len(pack))
	for i, ids := range pack {
		v, err := m.embedIDs(ctx, ids)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// embedIDs runs ids from an empty cache, in prefill chunks as Generate
// feeds a prompt, and pools the final-norm hidden states.
func (m *model) embedIDs(ctx context.Context, ids []int) ([]float32, error) {
	st := newState(m)
	st.headless = true
	defer st.release()
	H := m.arch.hidden
	p := newPooler(m.pooling.rule, H, len(ids))
	row := make([]float32, H)
	for at := 0; at < len(ids); at += prefillChunk {
		chunk := ids[at:min(at+prefillChunk, len(ids))]
		if _, err := st.forward(ctx, chunk); err != nil {
			return nil, err
		}
		for t := range chunk {
			m.kern.rmsnorm(row, st.x[t*H:(t+1)*H], m.w.norm, m.arch.eps)
			p.add(at+t, row)
		}
	}
	return p.vector(), nil
}

// pooler accumulates token vectors into one (float64 sums for the mean).
type pooler struct {
	rule string
	n    int // tokens in the input
	sum  []float64
	pick []float32
}

func newPooler(rule string, dim, n int) *pooler {
	p := &pooler{rule: rule, n: n}
	if rule == engine.PoolMean {
		p.sum = make([]float64, dim)
	} else {
		p.pick = make([]float32, dim)
	}
	return p
}

// add takes position t's vector.
func (p *pooler) add(t int, v []float32) {
	switch p.rule {
	case engine.PoolMean:
		for i, x := range v {
			p.sum[i] += float64(x)
		}
	case engine.PoolCLS:
		if t == 0 {
			copy(p.pick, v)
		}
	case engine.PoolLast:
		if t == p.n-1 {
			copy(p.pick, v)
		}
	}
}

func (p *pooler) vector() []float32 {
	if p.rule != engine.PoolMean {
		return p.pick
	}
	out := make([]float32, len(p.sum))
	for i, s := range p.sum {
		out[i] = float32(s / float64(p.n))
	}
	return out
}

// describeEmbedding fills ModelInfo's embedding fields: every decoder the
// engine loads embeds (mean-pooled unless its files say otherwise).
func (m *model) describeEmbedding() {
	if m.pooling.rule == "" {
		m.pooling.rule = engine.PoolMean
	}
	m.info.Embeds = true
	m.info.Pooling = m.pooling.rule
	m.info.EmbedNormalized = m.pooling.normalize
	m.info.EmbedLength = m.arch.hidden
}
