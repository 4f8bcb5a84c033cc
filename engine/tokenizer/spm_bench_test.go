package tokenizer

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSPMEncode measures tokenization speed on 4 KB of story text
// with TinyStories' vocabulary: in score form (spm) and, for comparison,
// as tokenizer.json BPE with merges (bpe; its word cache is off here, as
// a SentencePiece-style prompt is one word longer than it keeps).
func BenchmarkSPMEncode(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	text := ""
	for len(text) < 4096 {
		text += storyText(rng, 40) + "\n"
	}
	for _, c := range []struct {
		name string
		tk   *Tokenizer
	}{{"spm", newSPM(b, tinyStoriesSPM(b))}, {"bpe", load(b, tinyStories)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			tokens := 0
			for b.Loop() {
				tokens += len(c.tk.Encode(text, true))
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
