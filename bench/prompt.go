package bench

import (
	"context"
	"strings"

	"github.com/edgectl/edgectl/engine"
)

// openers start the prompts, one per run in turn: consecutive runs differ
// in their first word, so a server that keeps the last prompt's KV cache
// (Ollama, llama-server's cache_prompt) cannot skip the prefill being
// measured.
var openers = []string{"Once", "Then", "After", "Today", "Every", "Later", "Soon", "Still"}

// PromptText is run i's prompt of about n tokens: an opener word and n−2
// repetitions of " the", which common BPE and SentencePiece vocabularies
// take as one token each, so with BOS the prompt is n tokens. A server
// counts it its own way (and a chat endpoint adds its template); the
// report gives the count the server reported.
func PromptText(i, n int) string {
	return openers[i%len(openers)] + strings.Repeat(" the", max(n-2, 0))
}

// promptIDs is the in-process prompt: exactly n token ids. With a
// tokenizer, the first n tokens of a plain prompt of the PromptText rule
// (BOS, "Once", then " the" repeated); without one (the generated
// benchmark models), BOS where the model file names one, then ids spread
// over the vocabulary.
func promptIDs(ctx context.Context, sc engine.Scorer, vocab, n int) ([]int, error) {
	var ids []int
	if sc != nil {
		var err error
		ids, err = sc.Tokenize(ctx, PromptText(0, 2*n+8), true)
		if err != nil && ctx.Err() != nil {
			return nil, err
		}
		if len(ids) >= n {
			return ids[:n], nil
		}
		ids = ids[:0] // no tokenizer, or one that merges the words: synthetic ids
		if bos := sc.BOS(); bos >= 0 && bos < vocab {
			ids = append(ids, bos)
		}
	}
	for i := len(ids); i < n; i++ {
		ids = append(ids, (i*7919+11)%vocab)
	}
	return ids, nil
}
