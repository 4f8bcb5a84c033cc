package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// MinTokens is a true lower bound on the fixtures (a SentencePiece-style
// BPE fusing unknown characters, a byte-level BPE), for long runs of one
// character (the hostile single word), mixed scripts, whitespace runs and
// random bytes, and it is not vacuous on the single word.
func TestMinTokensBoundsEveryText(t *testing.T) {
	for _, dir := range []string{tinyStories, qwen3} {
		tok, err := Load(dir)
		if err != nil {
			t.Skipf("%s: %v", dir, err)
		}
		if least := tok.MinTokens(strings.Repeat("a", 1<<20)); least < 1<<10 {
			t.Fatalf("%s: a 1 MiB single word is bounded below by only %d tokens", dir, least)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		alphabet := []string{"a", "the ", " ", "\n", "é", "漢", "😀", "-", "=", "0", "\t", "    ", "ab", "<|im_start|>"}
		texts := []string{strings.Repeat("a", 100000), strings.Repeat(" ", 50000), strings.Repeat("=", 40000), strings.Repeat("漢", 20000)}
		for range 200 {
			var b strings.Builder
			for range rng.IntN(400) {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			texts = append(texts, b.String())
			raw := make([]byte, rng.IntN(300))
			for i := range raw {
				raw[i] = byte(rng.IntN(256))
			}
			texts = append(texts, string(raw))
		}
		for _, s := range texts {
			ids := tok.Encode(s, false)
			if least := tok.MinTokens(s); len(ids) < least {
				t.Fatalf("%s: %d bytes encode to %d tokens, fewer than the bound's %d: %.80q", dir, len(s), len(ids), least, s)
			}
		}
		t.Logf("%s: at most %d bytes a token", dir, tok.maxTokenBytes())
	}
}
