package engine

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Embedder is implemented by models that turn text into vectors: the CPU
// engine (decoder checkpoints pooled over their final-norm hidden states,
// and BERT-family encoders) and HTTP upstreams (which forward to their
// server's /v1/embeddings). serve asks a loaded Model for it as bench asks
// for the interfaces of measure.go; a model without it cannot embed, and
// serve answers 400 naming it.
type Embedder interface {
	// Embed returns one vector per input, in order, as the model's own
	// files define it: pooled (ModelInfo.Pooling) and, where the model
	// says so (sentence-transformers' Normalize module), L2-normalised.
	// The APIs that always normalise do so on top (NormalizeL2). An
	// input's vector does not depend on the batch around it: the CPU
	// engine runs a decoder's inputs alone, from an empty cache, and packs
	// an encoder's into shared forwards that give the same bits.
	Embed(ctx context.Context, req EmbedRequest) (EmbedResult, error)
}

// EmbedInput is one text, or the token ids of one (OpenAI's token-array
// input, sent to the model as they are: no special tokens added).
type EmbedInput struct {
	Text   string
	Tokens []int // used when non-nil
}

// EmbedRequest is a batch of inputs.
type EmbedRequest struct {
	Inputs []EmbedInput
	// Truncate cuts an input longer than the context to the context
	// (keeping its first tokens, and a final separator token where the
	// tokenizer ends every input with one), as Ollama's /api/embed does by
	// default. Without it such an input is ErrContextFull naming the limit.
	Truncate bool
	// Progress, when set, is called after each input is embedded (serve's
	// watchdog counts it as a sign of life).
	Progress func(done int)
}

// EmbedResult is the vectors and what they cost.
type EmbedResult struct {
	Embeddings [][]float32
	// Tokens is how many tokens each input ran as (after truncation);
	// PromptTokens their sum (OpenAI's usage, Ollama's prompt_eval_count).
	Tokens       []int
	PromptTokens int
	Duration     time.Duration
}

// Pooling rules: how token vectors become one vector.
const (
	PoolMean = "mean" // the average over the input's tokens
	PoolCLS  = "cls"  // the first token's vector ([CLS] for BERT)
	PoolLast = "last" // the last token's vector (sentence-transformers' lasttoken)
)

// NormalizeL2 scales v to unit length in place (a zero vector stays zero)
// and fails on NaN or infinite components, which no client can use.
func NormalizeL2(v []float32) error {
	var ss float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("the embedding holds a non-finite value at index %d: the model's weights hold NaN or infinite values (check it with `edgectl doctor`)", i)
		}
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return nil
	}
	inv := 1 / math.Sqrt(ss)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return nil
}

// TruncateDims keeps the first dims components of v and renormalises them
// (Matryoshka truncation, as OpenAI's and Ollama's `dimensions` do); dims
// ≤ 0 or ≥ len(v) leaves v as it is, normalised.
func TruncateDims(v []float32, dims int) ([]float32, error) {
	if dims > 0 && dims < len(v) {
		v = v[:dims:dims]
	}
	return v, NormalizeL2(v)
}
