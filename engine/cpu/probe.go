package cpu

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/hfconfig"
)

// Probe recognizes what Load runs: a .gguf or .h1b file (its size is what
// it holds loaded), or a Hugging Face checkpoint directory (config.json
// beside *.safetensors), described from its config.json.
func (cpuEngine) Probe(path string) (engine.Found, bool) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return engine.Found{}, false
	case fi.IsDir():
		return probeCheckpoint(path)
	case strings.HasSuffix(path, ".gguf"):
		return engine.Found{Format: "gguf", Size: fi.Size()}, true
	case strings.HasSuffix(path, ".h1b"):
		return engine.Found{Format: "h1b", Size: fi.Size()}, true
	}
	return engine.Found{}, false
}

// probeCheckpoint describes a checkpoint directory by its shards' sizes and
// config.json; an unreadable config.json leaves the description empty (Load
// says what is wrong with it).
func probeCheckpoint(dir string) (engine.Found, bool) {
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return engine.Found{}, false
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(shards) == 0 {
		return engine.Found{}, false
	}
	f := engine.Found{Format: "safetensors"}
	for _, s := range shards {
		if fi, err := os.Stat(s); err == nil {
			f.Size += fi.Size()
		}
	}
	if c, err := hfconfig.Load(filepath.Join(dir, "config.json")); err == nil {
		t := c.Text()
		f.Arch, f.ContextLength, f.Family = t.Arch(), t.MaxPositionEmbeddings, t.ModelType
		f.Quantization = dtypeLevel(t.WeightDType())
		f.EmbedOnly = isEncoderConfig(t)
	}
	f.Pooling = dirPooling(dir, engine.PoolMean).rule // embed_pooling.go
	return f, true
}

// dtypeLevel spells a torch dtype the way ModelInfo.Quantization does.
func dtypeLevel(d string) string {
	switch strings.ToLower(d) {
	case "float32":
		return "F32"
	case "float16":
		return "F16"
	case "bfloat16":
		return "BF16"
	}
	return strings.ToUpper(d)
}
