package axllm

import (
	"bytes"
	"encoding/json"

	"github.com/edgectl/edgectl/internal/atomicfile"
)

// WriteJSON writes one of the directory's JSON files (config.json,
// post_config.json, edgectl_build.json) atomically, with 4-space
// indentation like the configs AXERA ships and no HTML escaping (system
// prompts and chat markers keep their < and >).
func WriteJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, buf.Bytes(), 0o644)
}
