package serve

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/edgectl/edgectl/engine/tokenizer"
)

// With the model's tokenizer, max_tokens counts tokens, not the pieces the
// runtime prints: the fake prints "wN " pieces of 3+ byte tokens each, so
// counting pieces would let the answer run to three times the budget. The
// answer stops at the first piece that reaches the budget.
func TestNPUMaxTokensCountsTokenizerTokens(t *testing.T) {
	cl, dir, _ := npuModel(t, map[string]string{"tokenizer/tokenizer.json": byteLevelTokenizerJSON()})
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	count := func(s string) int { return len(tok.Encode(s, false)) }
	const max = 7
	stream := cl.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "npu",
		Messages: []openai.ChatCompletionMessageParamUnion{user("LONG")}, MaxTokens: openai.Int(max),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var text, last, finish string
	var usage int64
	for stream.Next() {
		c := stream.Current()
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				text += ch.Delta.Content
				last = ch.Delta.Content
			}
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
		if c.Usage.CompletionTokens > 0 {
			usage = c.Usage.CompletionTokens
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	n := count(text)
	if finish != "length" || n < max || count(text[:len(text)-len(last)]) >= max || usage != int64(n) {
		t.Errorf("max_tokens %d: answer %q (%d tokens, usage %d), finish %q; want it to stop at the first piece reaching %d tokens",
			max, text, n, usage, finish, max)
	}
}
