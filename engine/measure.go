package engine

import "context"

// Optional interfaces `edgectl bench` (package bench) asks a Model for,
// beyond Generate. Engines that run the weights in this process implement
// them (the CPU engine); a server or a vendor runtime behind a process
// cannot, and bench then leaves those figures out.

// Roofline is implemented by models that know what a decode step reads
// from memory, so a measured decode rate can be set against the machine's
// read bandwidth: decode is bound by the bytes read per token.
type Roofline interface {
	// DecodeBytes is what one decode step reads with cached positions
	// already in the KV cache: weights, every weight byte a token's
	// forward pass streams (layer matrices and LM head, as held in
	// memory), and kv, the K and V rows of the cached positions and the
	// new one.
	DecodeBytes(cached int) (weights, kv int64)
	// ReadBandwidth measures how fast threads cores (≤ 0: the model's
	// own thread count) read memory, in bytes per second: the best of a
	// few passes over the model's weights, and over a scratch buffer too
	// when the weights are small enough to stay in the caches.
	ReadBandwidth(threads int) float64
}

// TokenGenerator is implemented by models that run token ids directly:
// bench times prompts of an exact length, on models without a tokenizer
// too (the generated benchmark models have none), for an exact number of
// tokens.
type TokenGenerator interface {
	// GenerateTokens prefills prompt from an empty cache as Generate
	// prefills a prompt, then generates n tokens greedily without
	// stopping at an end-of-sequence token. The Result's durations mean
	// what Generate's do (TTFT: from the call to the first token).
	GenerateTokens(ctx context.Context, prompt []int, n int) (Result, error)
}

// Scorer is implemented by models whose tokenizer and logits are at hand:
// bench tokenizes its prompts with it, and measures perplexity.
type Scorer interface {
	// Tokenize encodes text as Generate encodes a plain Prompt when
	// special is true (BOS first where the tokenizer adds one), or the
	// text's own tokens only when it is false. A model without a
	// tokenizer returns an error.
	Tokenize(ctx context.Context, text string, special bool) ([]int, error)
	// BOS is the beginning-of-sequence token id (the tokenizer's, else
	// the model file's), -1 when there is none.
	BOS() int
	// ScoreTokens returns log p(ids[i] | ids[:i]) for i = 1 … len(ids)−1:
	// the float64 log-softmax of the raw logits at each position, as one
	// sequence from an empty cache. ids must fit the context
	// (ModelInfo.ContextLength).
	ScoreTokens(ctx context.Context, ids []int) ([]float64, error)
}
