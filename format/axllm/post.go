package axllm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/edgectl/edgectl/format/hfconfig"
)

// PostConfig is post_config.json. axllm requires every key, with no
// defaults (a missing one throws "type must be boolean, but is null").
type PostConfig struct {
	EnableTemperature       bool    `json:"enable_temperature"`
	Temperature             float64 `json:"temperature"`
	EnableRepetitionPenalty bool    `json:"enable_repetition_penalty"`
	RepetitionPenalty       float64 `json:"repetition_penalty"`
	PenaltyWindow           int     `json:"penalty_window"`
	EnableTopPSampling      bool    `json:"enable_top_p_sampling"`
	TopP                    float64 `json:"top_p"`
	EnableTopKSampling      bool    `json:"enable_top_k_sampling"`
	TopK                    int     `json:"top_k"`
}

// ReadPostConfig reads and completeness-checks a post_config.json.
func ReadPostConfig(path string) (*PostConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v", path, err)
	}
	var missing []string
	for _, k := range jsonKeys(PostConfig{}) {
		if v, ok := raw[k]; !ok || string(bytes.TrimSpace(v)) == "null" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: key(s) %s missing; axllm requires all of %s", path, strings.Join(missing, ", "), strings.Join(jsonKeys(PostConfig{}), ", "))
	}
	var p PostConfig
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &p, nil
}

// PostConfigFrom derives post_config.json from the model's own sampling
// defaults (generation_config.json); greedy models (do_sample false) get
// top-k 1.
func PostConfigFrom(g *hfconfig.GenerationConfig) PostConfig {
	p := PostConfig{
		Temperature: 0.7, RepetitionPenalty: 1.0, PenaltyWindow: 30, TopP: 0.8, TopK: 20,
		EnableTemperature: true, EnableTopKSampling: true, EnableTopPSampling: true,
	}
	if g.Temperature != nil && *g.Temperature > 0 {
		p.Temperature = *g.Temperature
	}
	if g.TopP != nil {
		p.TopP = *g.TopP
		p.EnableTopPSampling = *g.TopP < 1
	}
	if g.TopK != nil {
		p.TopK = *g.TopK
		p.EnableTopKSampling = *g.TopK > 0
	}
	if g.RepetitionPenalty != nil && *g.RepetitionPenalty != 1 {
		p.RepetitionPenalty = *g.RepetitionPenalty
		p.EnableRepetitionPenalty = true
	}
	if g.DoSample != nil && !*g.DoSample {
		p.EnableTemperature, p.EnableTopPSampling = false, false
		p.EnableTopKSampling, p.TopK = true, 1
	}
	return p
}
