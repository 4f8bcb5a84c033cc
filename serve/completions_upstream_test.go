package serve

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
)

// On an HTTP upstream that splits a reasoning model's thinking off
// (llama-server's reasoning_content, vLLM's and Ollama's reasoning),
// /v1/completions keeps it: the text is the model's, <think> block
// first, streamed and not, through openai-go, as the cpu lane's
// raw-prompt answer carries it.
func TestCompletionsKeepUpstreamThinking(t *testing.T) {
	ts, _ := upstreamReasoningServer(t)
	want := "<think>\n" + upThought + "\n</think>\n\n" + upAnswer
	c := ts.client()
	ctx := context.Background()
	for _, model := range []string{"remote", "remote-whole"} {
		params := openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(model),
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("What is the capital of France?")}}
		got, err := c.Completions.New(ctx, params)
		if err != nil || len(got.Choices) != 1 || got.Choices[0].Text != want || got.Choices[0].FinishReason != "stop" {
			t.Errorf("%s: %v %s; want text %q", model, err, got.RawJSON(), want)
		}
		stream := c.Completions.NewStreaming(ctx, params)
		var text string
		var chunks int
		for stream.Next() {
			if ch := stream.Current(); len(ch.Choices) > 0 {
				text += ch.Choices[0].Text
				chunks++
			}
		}
		if stream.Err() != nil || text != want || model == "remote" && chunks < 4 {
			t.Errorf("%s streamed: %v, %d chunks %q; want %q", model, stream.Err(), chunks, text, want)
		}
	}
}
