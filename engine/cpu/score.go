package cpu

import (
	"context"
	"fmt"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/sample"
)

// engine.Scorer: the tokenizer and every position's logits, for
// `edgectl bench` (its prompts, perplexity).

var _ engine.Scorer = (*model)(nil)

// Tokenize implements engine.Scorer.
func (m *model) Tokenize(ctx context.Context, text string, special bool) ([]int, error) {
	if m.tok == nil {
		return nil, fmt.Errorf("model %s has no tokenizer (put tokenizer.json beside it, or a .htok sidecar for .h1b)", m.info.Name)
	}
	return m.tok.EncodeContext(ctx, text, special)
}

// BOS implements engine.Scorer.
func (m *model) BOS() int {
	if m.tok == nil {
		return m.arch.bos
	}
	return m.tok.BOS()
}

// ScoreTokens implements engine.Scorer. The sequence goes through the
// forward pass in prefill chunks, as Generate feeds a prompt; after each
// chunk the final norm and the head run over all of its positions rather
// than the last one only (forward leaves every position's hidden state in
// state.x).
func (m *model) ScoreTokens(ctx context.Context, ids []int) ([]float64, error) {
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return nil, errModelClosed
	}
	if len(ids) > m.arch.ctx {
		return nil, fmt.Errorf("%d tokens exceed the context of %d: score them in windows of at most %d", len(ids), m.arch.ctx, m.arch.ctx)
	}
	st := newState(m)
	defer st.release()
	out := make([]float64, 0, max(len(ids)-1, 0))
	var logits []float32
	var lps *sample.Logprobs
	V := m.arch.vocab
	for p := 0; p < len(ids)-1; p += prefillChunk {
		chunk := ids[p:min(p+prefillChunk, len(ids)-1)] // the last token predicts nothing
		if _, err := st.forward(ctx, chunk); err != nil {
			return nil, err
		}
		logits = st.allLogits(len(chunk), logits)
		for t := range chunk {
			row := logits[t*V : (t+1)*V]
			if err := checkLogits(row, p+t); err != nil {
				return nil, err
			}
			lps = sample.NewLogprobs(row, 0, lps)
			out = append(out, lps.Of(ids[p+t+1]))
		}
	}
	return out, nil
}

// allLogits computes the logits of each of the last forward pass's n
// positions into buf (grown to n×vocab): the final norm and the head over
// every row of state.x, where forward computes the last row only.
func (s *state) allLogits(n int, buf []float32) []float32 {
	m, ar := s.m, &s.m.arch
	H := ar.hidden
	s.a.reset(n, H)
	for t := range n {
		m.kern.rmsnorm(s.a.f[t*H:(t+1)*H], s.x[t*H:(t+1)*H], m.w.norm, ar.eps)
	}
	buf = grow(buf, n*ar.vocab)
	m.matmul(buf, m.w.head, &s.a)
	for t := range n {
		m.w.exact.rescore(s.a.kern, buf[t*ar.vocab:(t+1)*ar.vocab], s.a.f[t*H:(t+1)*H])
	}
	return buf
}
