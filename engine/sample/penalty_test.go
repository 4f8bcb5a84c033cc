package sample

import (
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// Frequency and presence penalties follow OpenAI's formula
// logit −= count×frequency + (count > 0)×presence, counted over the
// penalty window, after the repetition penalty (llama.cpp's order). The
// values are exact in float32, so the expected logits are too.
func TestFrequencyPresencePenaltyExactLogits(t *testing.T) {
	history := []int{7, 1, 1, 2, 1, 3, 3} // 7 is outside the vocabulary: skipped
	for _, tc := range []struct {
		name string
		sm   engine.Sampling
		want []float32
	}{
		// counts: token 1 ×3, token 2 ×1, token 3 ×2, token 0 and 4 unseen.
		{"frequency", engine.Sampling{FrequencyPenalty: 0.5},
			[]float32{4, 3 - 1.5, -1 - 0.5, 2 - 1, 0.25}},
		{"presence", engine.Sampling{PresencePenalty: 0.75},
			[]float32{4, 3 - 0.75, -1 - 0.75, 2 - 0.75, 0.25}},
		{"both", engine.Sampling{FrequencyPenalty: 0.25, PresencePenalty: 1},
			[]float32{4, 3 - 0.75 - 1, -1 - 0.25 - 1, 2 - 0.5 - 1, 0.25}},
		// Negative values encourage repetition (OpenAI allows −2…2).
		{"negative", engine.Sampling{FrequencyPenalty: -0.5, PresencePenalty: -2},
			[]float32{4, 3 + 1.5 + 2, -1 + 0.5 + 2, 2 + 1 + 2, 0.25}},
		// The repetition penalty first (3/2, −1×2, 2/2), then the others.
		{"after repeat", engine.Sampling{RepeatPenalty: 2, FrequencyPenalty: 0.5, PresencePenalty: 0.25},
			[]float32{4, 1.5 - 1.5 - 0.25, -2 - 0.5 - 0.25, 1 - 1 - 0.25, 0.25}},
		// A window of 3 sees tokens 1, 3, 3 only.
		{"window", engine.Sampling{FrequencyPenalty: 0.5, PresencePenalty: 0.25, RepeatLastN: 3},
			[]float32{4, 3 - 0.5 - 0.25, -1, 2 - 1 - 0.25, 0.25}},
		// Off: logits untouched.
		{"off", engine.Sampling{}, []float32{4, 3, -1, 2, 0.25}},
	} {
		logits := []float32{4, 3, -1, 2, 0.25}
		New(tc.sm).Penalize(logits, history)
		for i := range logits {
			if logits[i] != tc.want[i] {
				t.Errorf("%s: logits %v, want %v", tc.name, logits, tc.want)
				break
			}
		}
	}
}

// Sample applies the penalties before choosing: a presence penalty moves
// greedy decoding off a token already said.
func TestPresencePenaltyChangesTheChoice(t *testing.T) {
	logits := func() []float32 { return []float32{1, 2, 1.5} }
	if got := New(engine.Sampling{Temperature: f(0)}).Sample(logits(), []int{1}); got != 1 {
		t.Fatalf("no penalty: %d", got)
	}
	if got := New(engine.Sampling{Temperature: f(0), PresencePenalty: 1}).Sample(logits(), []int{1}); got != 2 {
		t.Errorf("presence 1: %d, want 2", got)
	}
	if got := New(engine.Sampling{Temperature: f(0), FrequencyPenalty: 0.3}).Sample(logits(), []int{1, 1, 1, 1}); got != 2 {
		t.Errorf("frequency 0.3 × 4: %d, want 2", got)
	}
}

// PenaltiesOff (Ollama's repeat_last_n 0) leaves the logits untouched
// whatever penalties the request also carries, so greedy decoding keeps
// the token the penalties would have moved it off.
func TestPenaltiesOffOverridesThePenalties(t *testing.T) {
	history := []int{1, 1, 2}
	on := engine.Sampling{Temperature: f(0), RepeatPenalty: 4, FrequencyPenalty: 1, PresencePenalty: 1}
	if got := New(on).Sample([]float32{1, 2, 1.5}, history); got != 0 {
		t.Fatalf("penalties on: %d, want 0 (the penalties moved off 1 and 2)", got)
	}
	off := on
	off.PenaltiesOff = true
	logits := []float32{1, 2, 1.5}
	if got := New(off).Sample(logits, history); got != 1 {
		t.Errorf("penalties off: %d, want 1", got)
	}
	if logits[1] != 2 || logits[2] != 1.5 {
		t.Errorf("penalties off changed the logits: %v", logits)
	}
}
