package pulsar2

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/tokjson"
	"github.com/edgectl/edgectl/internal/atomicfile"
)

// copyTokenizer copies the tokenizer files present in modelDir
// (axllm.TokenizerFiles) to dst and returns their names (preparePlan made
// sure axllm's own file is there).
func copyTokenizer(modelDir, dst string) ([]string, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	var copied []string
	for _, name := range axllm.TokenizerFiles {
		src := filepath.Join(modelDir, name)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := atomicfile.Copy(src, filepath.Join(dst, name), 0o644); err != nil {
			return copied, err
		}
		copied = append(copied, name)
	}
	return copied, nil
}

// TokenizerType maps a checkpoint to ax-llm's tokenizer_type (axera.md §8);
// doctor and build share it, so doctor warns about what build would refuse.
func TokenizerType(cfg *hfconfig.Config, modelName string) (string, error) {
	mt := strings.ToLower(cfg.ModelType)
	text := strings.ToLower(cfg.Text().ModelType)
	name := strings.ToLower(modelName)
	switch {
	case strings.HasPrefix(mt, "qwen3_vl") || strings.HasPrefix(mt, "qwen3vl"):
		return "Qwen3VL", nil
	case strings.HasPrefix(mt, "qwen3") || strings.HasPrefix(text, "qwen3"):
		return "Qwen3", nil
	case strings.HasPrefix(mt, "qwen2") || strings.HasPrefix(text, "qwen2"):
		return "Qwen2_5", nil
	case strings.Contains(name, "smollm"):
		return "SmolLM2", nil
	case mt == "llama" || text == "llama":
		return "LLaMA", nil
	}
	return "", inputErr(fmt.Sprintf("no ax-llm tokenizer_type known for model_type %q", cfg.ModelType),
		"pass --tokenizer-type (Qwen3, Qwen2_5, Qwen3VL, Gemma4VL, SmolLM2, LLaMA)")
}

// tokenizerTxtName is the name pulsar2 gives the tokenizer file it exports
// for a model type ("qwen3_tokenizer.txt").
func tokenizerTxtName(modelType string) string {
	return strings.ToLower(strings.ReplaceAll(modelType, "-", "_")) + "_tokenizer.txt"
}

// readAddBos is tokenizer_config.json's add_bos_token, nil when unset.
func readAddBos(modelDir string) *bool {
	tc, err := tokjson.LoadConfig(modelDir)
	if err != nil {
		return nil
	}
	return tc.AddBOS
}
