package cpu

import (
	"context"
	"fmt"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/sample"
)

var _ engine.TokenGenerator = (*model)(nil)

// GenerateTokens implements engine.TokenGenerator for `edgectl bench`:
// Generate's prefill (chunks of prefillChunk), greedy sampler and timing
// points, without the tokenizer, chat template, stop strings and
// end-of-sequence test, on a cache of its own that it releases after.
func (m *model) GenerateTokens(ctx context.Context, prompt []int, n int) (engine.Result, error) {
	start := time.Now()
	var res engine.Result
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return res, errModelClosed
	}
	if len(prompt) == 0 || n < 1 {
		return res, fmt.Errorf("%w: generating needs a prompt and at least one token (got %d and %d)", engine.ErrInvalidRequest, len(prompt), n)
	}
	if len(prompt)+n > m.arch.ctx {
		return res, fmt.Errorf("%w: %d prompt and %d generated tokens exceed the context of %d", engine.ErrContextFull, len(prompt), n, m.arch.ctx)
	}
	st := newState(m)
	defer st.release()
	var logits []float32
	var err error
	for p := 0; p < len(prompt); p += prefillChunk {
		if logits, err = st.forward(ctx, prompt[p:min(p+prefillChunk, len(prompt))]); err != nil {
			return res, err
		}
	}
	if err := checkLogits(logits, st.pos); err != nil {
		return res, err
	}
	res.PromptTokens = len(prompt)
	res.PrefillDuration = time.Since(start)

	zero := 0.0
	smp := sample.New(engine.Sampling{Temperature: &zero})
	history := append(make([]int, 0, len(prompt)+n), prompt...)
	decodeStart := time.Now()
	for {
		id := smp.Sample(logits, history)
		res.CompletionTokens++
		if res.CompletionTokens == 1 {
			res.TTFT = time.Since(start)
		}
		if res.CompletionTokens >= n {
			break
		}
		history = append(history, id)
		if logits, err = st.forward(ctx, []int{id}); err == nil {
			err = checkLogits(logits, st.pos)
		}
		if err != nil {
			return res, err
		}
	}
	res.DecodeDuration = time.Since(decodeStart)
	res.FinishReason = engine.FinishLength
	return res, nil
}
