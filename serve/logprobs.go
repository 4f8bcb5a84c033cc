package serve

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// Token log-probabilities in the wire shapes: OpenAI chat's
// choices[].logprobs.content[], the legacy completions arrays, and
// Ollama's logprobs list.

// minLogprob is what OpenAI reports for a token of probability ~0: JSON
// has no -Inf.
const minLogprob = -9999.0

func wireLogprob(v float64) float64 {
	if math.IsNaN(v) || v < minLogprob {
		return minLogprob
	}
	return min(v, 0)
}

// tokenText shows a token's bytes as text; a token holding part of a
// character shows U+FFFD there (its bytes field has the real bytes).
func tokenText(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

func byteInts(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// chatLogprobs converts entries to chat's content[] items.
func chatLogprobs(lps []engine.TokenLogprob) []api.TokenLogprob {
	out := make([]api.TokenLogprob, 0, len(lps))
	for _, lp := range lps {
		t := api.TokenLogprob{Token: tokenText(lp.Bytes), Logprob: wireLogprob(lp.Logprob.Logprob), Bytes: byteInts(lp.Bytes),
			TopLogprobs: make([]api.TopLogprob, 0, len(lp.Top))}
		for _, alt := range lp.Top {
			t.TopLogprobs = append(t.TopLogprobs, api.TopLogprob{Token: tokenText(alt.Bytes), Logprob: wireLogprob(alt.Logprob), Bytes: byteInts(alt.Bytes)})
		}
		out = append(out, t)
	}
	return out
}

// legacyLogprobs builds the completions arrays; it carries the character
// offset from one stream chunk to the next.
type legacyLogprobs struct {
	text []byte // every token's bytes so far
}

func (c *legacyLogprobs) add(lps []engine.TokenLogprob) *api.CompletionLogprobs {
	out := &api.CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for _, lp := range lps {
		out.Tokens = append(out.Tokens, tokenText(lp.Bytes))
		out.TokenLogprobs = append(out.TokenLogprobs, wireLogprob(lp.Logprob.Logprob))
		top := make(map[string]float64, len(lp.Top))
		for _, alt := range lp.Top {
			if _, dup := top[tokenText(alt.Bytes)]; !dup { // the likelier of two tokens that read the same
				top[tokenText(alt.Bytes)] = wireLogprob(alt.Logprob)
			}
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, utf8.RuneCount(c.text))
		c.text = append(c.text, lp.Bytes...)
	}
	return out
}

// ollamaLogprobs converts entries to Ollama's logprobs list.
func ollamaLogprobs(lps []engine.TokenLogprob) []api.OllamaLogprob {
	if len(lps) == 0 {
		return nil
	}
	out := make([]api.OllamaLogprob, 0, len(lps))
	for _, lp := range lps {
		t := api.OllamaLogprob{OllamaTopLogprob: api.OllamaTopLogprob{Token: tokenText(lp.Bytes), Logprob: wireLogprob(lp.Logprob.Logprob),
			Bytes: byteInts(lp.Bytes)}}
		for _, alt := range lp.Top {
			t.TopLogprobs = append(t.TopLogprobs, api.OllamaTopLogprob{Token: tokenText(alt.Bytes), Logprob: wireLogprob(alt.Logprob), Bytes: byteInts(alt.Bytes)})
		}
		out = append(out, t)
	}
	return out
}
