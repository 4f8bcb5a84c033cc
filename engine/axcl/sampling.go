package axcl

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/axllm"
)

// Request sampling on the vendor lane. The runtime samples only as its
// post_config.json says, read once at init (AXERA-TECH/ax-llm
// src/runner/LLMPostprocess.hpp load_config, LLM.hpp init), so a request
// whose sampling differs from what the process runs with gets a per-model
// post_config.json and a restart (sysprompt.go); the same sampling again
// continues. What LLMPostprocess::apply does, and so how each field maps:
//
//   - temperature divides the logits (enable_temperature); 0 would divide
//     by zero, so temperature 0 turns temperature, top_p and top_k off: the
//     runtime then takes the argmax (greedy). With neither top_p nor top_k
//     enabled the runtime is greedy whatever the temperature, so a
//     temperature > 0 alone enables top_p 1.0: sampling from the whole
//     distribution, as OpenAI means it.
//   - top_p enables top-p sampling and turns top_k off; top_k enables
//     top-k and turns top_p off. apply uses one of them (top_p first), so a
//     request with both is refused (serve/fields.go, and ErrInvalidRequest
//     here), as is a top_k above the vocabulary (partial_sort past the end).
//   - the repetition penalty divides a positive logit (multiplies a
//     negative one) by sqrt(repetition_penalty), for the distinct tokens
//     among the last penalty_window tokens of the answer being generated
//     (the prompt is not in that history). So repeat_penalty p is written
//     as p², which applies p itself as llama.cpp does; penalty_window is
//     repeat_last_n (64 when left out, as on the cpu lane). Sampling.
//     PenaltiesOff (Ollama's repeat_last_n 0) writes the penalty as off.
//
// min_p, seed (the runtime seeds from std::random_device), frequency and
// presence penalties have no counterpart and are refused by serve.

// defaultPenaltyWindow is the cpu lane's window when repeat_last_n is absent.
const defaultPenaltyWindow = 64

// postFor is the post_config the request asks for: base (the model's own,
// or greedy defaults when it has none) with the request's fields laid over
// it. vocab bounds top_k (0: unknown).
func postFor(base axllm.PostConfig, s engine.Sampling, vocab int) (axllm.PostConfig, error) {
	p := base
	topP := s.TopP > 0 && s.TopP <= 1
	if topP && s.TopK > 0 && s.TopP < 1 {
		return p, fmt.Errorf("%w: top_k cannot be combined with top_p on the axcl lane: the vendor runtime samples with one of them (LLMPostprocess::apply); send one", engine.ErrInvalidRequest)
	}
	if vocab > 0 && s.TopK > vocab {
		return p, fmt.Errorf("%w: top_k = %d exceeds the model's vocabulary (%d tokens); send at most %d", engine.ErrInvalidRequest, s.TopK, vocab, vocab)
	}
	switch {
	case topP:
		p.EnableTopPSampling, p.TopP, p.EnableTopKSampling = true, s.TopP, false
	case s.TopK > 0:
		p.EnableTopKSampling, p.TopK, p.EnableTopPSampling = true, s.TopK, false
	}
	if t := s.Temperature; t != nil {
		if *t == 0 {
			p.EnableTemperature, p.EnableTopPSampling, p.EnableTopKSampling = false, false, false
		} else {
			p.EnableTemperature, p.Temperature = true, *t
			if !p.EnableTopPSampling && !p.EnableTopKSampling {
				p.EnableTopPSampling, p.TopP = true, 1
			}
		}
	}
	if s.RepeatPenalty > 0 {
		p.EnableRepetitionPenalty = s.RepeatPenalty != 1
		p.RepetitionPenalty = s.RepeatPenalty * s.RepeatPenalty
		p.PenaltyWindow = defaultPenaltyWindow
	}
	if s.RepeatLastN > 0 {
		p.PenaltyWindow = min(s.RepeatLastN, math.MaxInt32)
	}
	if s.PenaltiesOff {
		// Ollama's repeat_last_n 0: off, whatever the model's post_config
		// enables (only the flag: the rest of the model's file stays, so a
		// model whose penalty is already off keeps its own file).
		p.EnableRepetitionPenalty = false
	}
	return p, nil
}

// greedyPost is what the runtime does without a post_config.json: every
// option off (LLMPostprocess's member defaults), so argmax.
var greedyPost = axllm.PostConfig{Temperature: 1, RepetitionPenalty: 1, PenaltyWindow: 20, TopP: 1, TopK: 1}

// samplingState is the post_config the model's process runs with.
type samplingState struct {
	base    axllm.PostConfig  // the model directory's post_config.json (greedyPost when it has none)
	running *axllm.PostConfig // nil: the model's own
}

// loadBasePost reads the directory's post_config.json the way axllm finds
// it (config.json post_config_path, else post_config.json).
func loadBasePost(dir string, cfg *axllm.Config) axllm.PostConfig {
	p, err := axllm.ReadPostConfig(axllm.PostConfigFile(dir, cfg))
	if err != nil {
		return greedyPost
	}
	return *p
}

// wantPost is the post_config req needs: nil when that is the model's own.
func (m *Model) wantPost(req engine.Request) (*axllm.PostConfig, error) {
	p, err := postFor(m.samp.base, req.Sampling, m.info.VocabSize)
	if err != nil || p == m.samp.base {
		return nil, err
	}
	if m.sysVia == sysNone {
		return nil, fmt.Errorf("%w: sampling options cannot reach this runtime: its command has neither {dir} nor --system_prompt, so edgectl cannot give it a post_config.json; leave temperature, top_p, top_k and repeat_penalty out", engine.ErrInvalidRequest)
	}
	return &p, nil
}

func samePost(a, b *axllm.PostConfig) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// writePost writes p as post_config.json under dir.
func writePost(dir string, p *axllm.PostConfig) (string, error) {
	path := filepath.Join(dir, axllm.PostConfigName)
	return path, axllm.WriteJSON(path, p)
}

// postWords describes post for a log line.
func postWords(p *axllm.PostConfig) string {
	if p == nil {
		return "the model's own"
	}
	return fmt.Sprintf("temperature %v/%g, top_p %v/%g, top_k %v/%d, repetition_penalty %v/%g over %d",
		p.EnableTemperature, p.Temperature, p.EnableTopPSampling, p.TopP, p.EnableTopKSampling, p.TopK,
		p.EnableRepetitionPenalty, p.RepetitionPenalty, p.PenaltyWindow)
}
