package hfconfig

import "fmt"

// Limits bound the config.json numbers that size allocations (weights,
// KV caches, vocabulary tables). A value past a limit is a corrupt or
// hostile config, not a model anything can run; the defaults are far
// above every published checkpoint.
type Limits struct {
	HiddenSize       int
	IntermediateSize int
	Layers           int
	Heads            int // num_attention_heads and num_key_value_heads
	HeadDim          int
	VocabSize        int
	Experts          int
	// Context bounds the context a reader reserves. A larger
	// max_position_embeddings is not an error (the model's claim may be
	// true, and a reader need not reserve all of it): ContextLength clamps.
	Context int
}

// DefaultLimits are the bounds Validate applies.
var DefaultLimits = Limits{
	HiddenSize:       1 << 17, // 131072; the largest models use 16–20K
	IntermediateSize: 1 << 20,
	Layers:           4096,
	Heads:            4096,
	HeadDim:          1 << 14,
	VocabSize:        1 << 24, // 16.7M; the largest vocabularies are ~260K
	Experts:          1 << 14,
	Context:          1 << 24, // 16.7M positions
}

// Validate checks the language-model dimensions against DefaultLimits:
// hidden_size, num_hidden_layers, num_attention_heads and vocab_size must
// be positive and bounded, the others non-negative and bounded, and the
// head split consistent. Readers that size memory from the config (the
// engine, doctor, prep) call it before allocating anything. The error is a
// *LoadError of kind ErrInvalid naming the file and the key.
func (c *Config) Validate() error { return c.ValidateLimits(DefaultLimits) }

// ValidateLimits is Validate with explicit bounds.
func (c *Config) ValidateLimits(l Limits) error {
	t, prefix := c.Text(), ""
	if t != c {
		prefix = "text_config."
	}
	fail := func(format string, args ...any) error {
		return &LoadError{Path: c.Path, Kind: ErrInvalid, Msg: fmt.Sprintf(format, args...),
			Fix: "the config is corrupt or hostile: restore config.json from the original Hugging Face repository"}
	}
	// Everything the typed view holds, text_config's included: never
	// negative, never absurd.
	for _, cfg := range []*Config{c, c.TextConfig} {
		if cfg == nil {
			continue
		}
		p := ""
		if cfg != c {
			p = "text_config."
		}
		for _, f := range []struct {
			key   string
			v, hi int
		}{
			{"hidden_size", cfg.HiddenSize, l.HiddenSize},
			{"intermediate_size", cfg.IntermediateSize, l.IntermediateSize},
			{"num_hidden_layers", cfg.NumHiddenLayers, l.Layers},
			{"num_attention_heads", cfg.NumAttentionHeads, l.Heads},
			{"num_key_value_heads", cfg.NumKeyValueHeads, l.Heads},
			{"head_dim", cfg.HeadDim, l.HeadDim},
			{"vocab_size", cfg.VocabSize, l.VocabSize},
			{"num_experts", cfg.NumExperts, l.Experts},
			{"num_local_experts", cfg.NumLocalExperts, l.Experts},
			{"n_routed_experts", cfg.NRoutedExperts, l.Experts},
			{"kv_cache_len", cfg.KVCacheLen, l.Context},
			{"max_position_embeddings", cfg.MaxPositionEmbeddings, int(^uint(0) >> 1)},
		} {
			if f.v < 0 || f.v > f.hi {
				return fail("%s%s %d is outside 0..%d", p, f.key, f.v, f.hi)
			}
		}
		if cfg.SlidingWindow != nil && *cfg.SlidingWindow < 0 {
			return fail("%ssliding_window %d is negative", p, *cfg.SlidingWindow)
		}
	}
	// What a language model cannot be without.
	for _, f := range []struct {
		key string
		v   int
	}{
		{"hidden_size", t.HiddenSize}, {"num_hidden_layers", t.NumHiddenLayers}, {"num_attention_heads", t.NumAttentionHeads},
	} {
		if f.v == 0 {
			return fail("%s%s is 0 or missing; a language model needs it", prefix, f.key)
		}
	}
	if t.VocabSize == 0 && c.VocabSize == 0 {
		return fail("vocab_size is 0 or missing; a language model needs it")
	}
	if kv := t.NumKeyValueHeads; kv > 0 && (kv > t.NumAttentionHeads || t.NumAttentionHeads%kv != 0) {
		return fail("%snum_attention_heads %d is not a multiple of num_key_value_heads %d", prefix, t.NumAttentionHeads, kv)
	}
	if t.HeadDim == 0 && t.HiddenSize%t.NumAttentionHeads != 0 {
		return fail("%shidden_size %d is not a multiple of num_attention_heads %d (and head_dim is not set)", prefix, t.HiddenSize, t.NumAttentionHeads)
	}
	return nil
}

// ContextLength is max_position_embeddings of the language model clamped
// to limit (DefaultLimits.Context when limit ≤ 0); 0 when the config does
// not say.
func (c *Config) ContextLength(limit int) int {
	if limit <= 0 {
		limit = DefaultLimits.Context
	}
	n := c.Text().MaxPositionEmbeddings
	if n == 0 {
		n = c.MaxPositionEmbeddings
	}
	return max(0, min(n, limit))
}
