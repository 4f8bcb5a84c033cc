package axcl

import (
	"os"

	"github.com/edgectl/edgectl/engine"
)

// Probe recognizes what Load runs: a compiled ax-llm directory, as
// format/axllm reads it (an ax-llm config.json beside the post model; a
// Hugging Face config.json is not one). Its size is the compiled layers'
// footprint in the NPU's CMM pool.
func (e *Engine) Probe(path string) (engine.Found, bool) {
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() || !IsModelDir(path) {
		return engine.Found{}, false
	}
	return engine.Found{Format: "axmodel", Size: Footprint(path)}, true
}
