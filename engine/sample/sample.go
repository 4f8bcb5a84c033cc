// Package sample picks the next token from logits: greedy, or temperature
// sampling narrowed by top-k, top-p and min-p, after the repetition,
// frequency and presence penalties; and the log-probabilities serve reports.
// A Sampler with a seed is deterministic.
package sample

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/edgectl/edgectl/engine"
)

// Defaults applied when a Sampling field is zero (llama.cpp's defaults).
const (
	DefaultTemperature = 0.8
	DefaultTopK        = 40
	DefaultTopP        = 0.95
	DefaultMinP        = 0.05
	DefaultRepeatLastN = 64
)

// Sampler holds the parameters and the random source of one generation.
type Sampler struct {
	temp       float64
	topK       int
	topP, minP float64
	penalty    float64 // repetition (CTRL), 0 or 1: off
	freq, pres float64 // frequency and presence penalties, 0: off
	lastN      int
	counts     map[int]int
	rng        *rand.Rand
	idx        []int
	probs      []float64
}

// New builds a sampler. A nil Temperature means the default; 0 is greedy.
func New(s engine.Sampling) *Sampler {
	p := &Sampler{temp: DefaultTemperature, topK: s.TopK, topP: s.TopP, minP: s.MinP,
		penalty: s.RepeatPenalty, freq: s.FrequencyPenalty, pres: s.PresencePenalty, lastN: s.RepeatLastN}
	if s.Temperature != nil {
		p.temp = *s.Temperature
	}
	if s.PenaltiesOff {
		p.penalty, p.freq, p.pres = 0, 0, 0
	}
	switch {
	case p.lastN == 0:
		p.lastN = DefaultRepeatLastN
	case p.lastN < 0: // the whole history (Ollama's repeat_last_n -1)
		p.lastN = math.MaxInt
	}
	seed := uint64(time.Now().UnixNano())
	if s.Seed != nil {
		seed = uint64(*s.Seed)
	}
	p.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return p
}

// Greedy reports whether sampling is deterministic argmax.
func (p *Sampler) Greedy() bool { return p.temp <= 0 }

// Sample picks a token. logits are modified (penalties, temperature);
// history is the sequence so far (prompt and output) for the penalties.
func (p *Sampler) Sample(logits []float32, history []int) int {
	p.Penalize(logits, history)
	if p.temp <= 0 {
		return Argmax(logits)
	}
	// Candidates sorted by logit, descending.
	// Tokens more than 30 nats below the best (probability ratio < 1e-13)
	// are dropped before sorting: a 128k vocabulary need not be sorted.
	mx0 := logits[Argmax(logits)]
	floor := float64(mx0) - 30*p.temp
	p.idx = p.idx[:0]
	for i, v := range logits {
		if float64(v) >= floor {
			p.idx = append(p.idx, i)
		}
	}
	if len(p.idx) == 0 {
		// Nothing passed the floor: it is NaN (a NaN temperature or best
		// logit). Argmax always answers a valid index; never panic on a float.
		return Argmax(logits)
	}
	k := p.topK
	if k <= 0 || k > len(p.idx) {
		k = len(p.idx)
	}
	slices.SortStableFunc(p.idx, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return a - b
	})
	cand := p.idx[:k]
	mx := float64(logits[cand[0]])
	p.probs = p.probs[:0]
	var sum float64
	for _, id := range cand {
		e := math.Exp((float64(logits[id]) - mx) / p.temp)
		p.probs = append(p.probs, e)
		sum += e
	}
	for i := range p.probs {
		p.probs[i] /= sum
	}
	n := len(cand)
	if p.minP > 0 {
		lim := p.probs[0] * p.minP
		for n > 1 && p.probs[n-1] < lim {
			n--
		}
	}
	if p.topP > 0 && p.topP < 1 {
		var c float64
		for i := range n {
			c += p.probs[i]
			if c >= p.topP {
				n = i + 1
				break
			}
		}
	}
	var total float64
	for _, v := range p.probs[:n] {
		total += v
	}
	r := p.rng.Float64() * total
	for i, v := range p.probs[:n] {
		r -= v
		if r < 0 {
			return cand[i]
		}
	}
	return cand[n-1]
}

// Penalize applies the penalties to logits for the tokens among the last
// lastN of history, as llama.cpp's penalties sampler does: each token seen
// there count times first gets the repetition penalty (a positive logit is
// divided by it, a negative one multiplied), then loses
// count×frequency + presence (OpenAI's documented formula). The window
// holds prompt tokens too, as llama.cpp's server feeds them to its sampler.
func (p *Sampler) Penalize(logits []float32, history []int) {
	repeat := p.penalty > 0 && p.penalty != 1
	if !repeat && p.freq == 0 && p.pres == 0 {
		return
	}
	if p.counts == nil {
		p.counts = map[int]int{}
	}
	clear(p.counts)
	for _, id := range history[max(0, len(history)-p.lastN):] {
		if id >= 0 && id < len(logits) {
			p.counts[id]++
		}
	}
	for id, n := range p.counts {
		if repeat {
			// CTRL-style penalty, as llama.cpp and transformers apply it.
			if logits[id] > 0 {
				logits[id] /= float32(p.penalty)
			} else {
				logits[id] *= float32(p.penalty)
			}
		}
		logits[id] -= float32(n)*float32(p.freq) + float32(p.pres)
	}
}

// Mask sets the logits of the tokens allowed leaves out to −Inf, so no
// sampler (greedy included) picks them: bit id%64 of allowed[id/64] allows
// token id, and ids past the mask (a padded embedding's rows) are left
// out. It returns how many tokens stay allowed; 0 leaves nothing to
// sample. Penalties and temperature keep −Inf as it is. A grammar fills
// the mask (engine/grammar.Matcher.Allowed).
func Mask(logits []float32, allowed []uint64) int {
	inf := float32(math.Inf(-1))
	n := 0
	for w, word := range allowed {
		base := w * 64
		if base >= len(logits) {
			break
		}
		row := logits[base:min(base+64, len(logits))]
		if len(row) < 64 {
			word &= 1<<len(row) - 1
		}
		n += bits.OnesCount64(word)
		if word == 0 {
			copy(row, negInf[:])
			continue
		}
		for out := ^word; out != 0; out &= out - 1 { // the disallowed ids
			if i := bits.TrailingZeros64(out); i < len(row) {
				row[i] = inf
			}
		}
	}
	for i := len(allowed) * 64; i < len(logits); i++ {
		logits[i] = inf
	}
	return n
}

// negInf is a row of −Inf for Mask to copy (memmove beats a store loop).
var negInf = func() (r [64]float32) {
	for i := range r {
		r[i] = float32(math.Inf(-1))
	}
	return r
}()

// Argmax returns the index of the largest logit (the lowest index on ties).
func Argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}
