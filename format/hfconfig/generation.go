package hfconfig

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
)

// GenerationConfig is generation_config.json: the model's own sampling
// defaults and stop ids.
type GenerationConfig struct {
	BosTokenID        IDs      `json:"bos_token_id"`
	EosTokenID        IDs      `json:"eos_token_id"`
	PadTokenID        IDs      `json:"pad_token_id"`
	DoSample          *bool    `json:"do_sample"`
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	MaxNewTokens      *int     `json:"max_new_tokens"`
}

// LoadGeneration reads DIR/generation_config.json; a missing file is an
// empty config, not an error (most checkpoints have one, some do not).
func LoadGeneration(dir string) (*GenerationConfig, error) {
	path := filepath.Join(dir, "generation_config.json")
	b, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &GenerationConfig{}, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := Parse(b, path); err != nil { // same faults, same messages
		return nil, err
	}
	var g GenerationConfig
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, &LoadError{Path: path, Kind: ErrInvalid, Msg: "invalid JSON: " + describeJSONError(b, err)}
	}
	return &g, nil
}
