package tokenizer

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkWordPieceEncode: English-like text with punctuation, accents
// and CJK through the uncased generated tokenizer; reports bytes/s.
func BenchmarkWordPieceEncode(b *testing.B) {
	tok, err := Load(writeBertTokenizer(b, bertVariants[0]))
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("The unaffable player's tokenizer, hello world! Café naïve 中国人. ", 1000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.EncodeContext(context.Background(), text, true); err != nil {
			b.Fatal(err)
		}
	}
}
