package cpu

import (
	"context"
	"errors"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// GenerateTokens generates exactly the asked tokens where Generate, on the
// same prompt and greedy, stops at end-of-sequence; its Result is timed as
// Generate's; past the context it refuses, as a closed model does.
func TestGenerateTokensIgnoresEOS(t *testing.T) {
	m := loadModel(t, tinyStories)
	z := 0.0
	req := engine.Request{Prompt: "Once upon a time", MaxTokens: 400, Sampling: engine.Sampling{Temperature: &z}}
	_, res := generateTokens(t, m, req)
	if res.FinishReason != engine.FinishStop || res.CompletionTokens >= 200 {
		t.Fatalf("the fixture's greedy story no longer ends by itself within 200 tokens (%s after %d): pick another prompt", res.FinishReason, res.CompletionTokens)
	}
	ids := m.tok.Encode(req.Prompt, true)
	got, err := m.GenerateTokens(context.Background(), ids, 200)
	if err != nil {
		t.Fatal(err)
	}
	if got.CompletionTokens != 200 || got.PromptTokens != len(ids) || got.FinishReason != engine.FinishLength {
		t.Errorf("GenerateTokens: %+v; want 200 tokens after a prompt of %d", got, len(ids))
	}
	if !(got.PrefillDuration > 0 && got.TTFT >= got.PrefillDuration && got.DecodeDuration > 0 && got.DecodeTPS() > 0 && got.PrefillTPS() > 0) {
		t.Errorf("timings: %+v", got)
	}
	if _, err := m.GenerateTokens(context.Background(), ids, m.arch.ctx); !errors.Is(err, engine.ErrContextFull) {
		t.Errorf("past the context: %v", err)
	}
	m.Close()
	if _, err := m.GenerateTokens(context.Background(), ids, 2); err == nil {
		t.Error("a closed model generated")
	}
}
