package pulsar2

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/internal/atomicfile"
)

// RegenOptions tune RegenerateConfig.
type RegenOptions struct {
	ModelName     string // default: the directory name
	TokenizerType string // default: from the model family
	// Write replaces the runtime config (keeping config.json.orig); without
	// it the config is only computed.
	Write bool
}

// RegenerateConfig rebuilds the ax-llm config.json of an already compiled
// model directory. Hugging Face repositories of compiled models often ship a
// 0-byte config.json, and axllm dies on it with "parse error … empty
// input". Everything the runtime needs can be recovered from the directory:
// the layer and post models (DiscoverLayout), the bf16 embedding's size and
// the model's Hugging Face config in the tokenizer sidecar directory
// (*tokenizer*/config.json, where axllm itself looks) give vocab × hidden,
// and the tokenizer file is the shipped *_tokenizer.txt or one exported
// from the sidecar's tokenizer.json. A missing post_config.json is written
// from the sidecar's generation_config.json.
func RegenerateConfig(dir string, opts RegenOptions) (*axllm.Config, error) {
	if b, err := os.ReadFile(filepath.Join(dir, axllm.ConfigName)); err == nil && len(bytes.TrimSpace(b)) > 0 {
		if c, err := axllm.ParseConfig(b, filepath.Join(dir, axllm.ConfigName)); err == nil {
			return c, nil // already valid: nothing to regenerate
		}
	}
	lay, err := axllm.DiscoverLayout(dir)
	if err != nil {
		return nil, err
	}
	side, hf, err := findSidecar(dir)
	if err != nil {
		return nil, err
	}
	text := hf.Text()
	st, err := os.Stat(filepath.Join(dir, axllm.EmbedFileName))
	if err != nil {
		return nil, fmt.Errorf("%s: no %s; it holds the token embeddings and cannot be regenerated without the source checkpoint (edgectl pulsar2 build writes it)", dir, axllm.EmbedFileName)
	}
	row := int64(text.HiddenSize) * 2
	if text.HiddenSize <= 0 || st.Size()%row != 0 {
		return nil, fmt.Errorf("%s: %d bytes is not a whole number of bf16 rows of hidden_size %d (from %s)", axllm.EmbedFileName, st.Size(), text.HiddenSize, filepath.Join(side, "config.json"))
	}
	vocab := int(st.Size() / row)
	name := opts.ModelName
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	tokType := opts.TokenizerType
	if tokType == "" {
		if tokType, err = TokenizerType(hf, name); err != nil {
			return nil, err
		}
	}
	gen, err := hfconfig.LoadGeneration(side)
	if err != nil {
		return nil, err
	}
	tok := ""
	if m, _ := filepath.Glob(filepath.Join(dir, "*_tokenizer.txt")); len(m) == 1 && axllm.IsTokenizerTxt(m[0]) {
		tok = filepath.Base(m[0])
	}
	cfg := &axllm.Config{
		ModelName: name, TokenizerType: tokType, URLTokenizerModel: tok,
		TemplateFilenameAxmodel: lay.Template, AxmodelNum: lay.Layers, FilenamePostAxmodel: lay.Post,
		FilenameTokensEmbed: axllm.EmbedFileName, TokensEmbedNum: vocab, TokensEmbedSize: text.HiddenSize,
		PostConfigPath: axllm.PostConfigName, Eos: boolp(false), UseMmapLoadEmbed: boolp(true),
	}
	if text.NumHiddenLayers > 0 && text.NumHiddenLayers != lay.Layers {
		return nil, fmt.Errorf("%s: %d layer files but num_hidden_layers %d in %s", dir, lay.Layers, text.NumHiddenLayers, filepath.Join(side, "config.json"))
	}
	if !opts.Write {
		if tok == "" {
			cfg.URLTokenizerModel = tokenizerTxtName(hf.ModelType)
		}
		return cfg, nil
	}
	// Temporaries of a killed earlier run writing the same files.
	if _, err := atomicfile.CleanStale(dir, axllm.ConfigName, axllm.PostConfigName); err != nil {
		return nil, err
	}
	if tok == "" {
		tok = tokenizerTxtName(hf.ModelType)
		stops := []int(gen.EosTokenID)
		if len(stops) == 0 {
			stops = []int(text.EosTokenID)
		}
		if err := axllm.WriteTokenizerTxt(filepath.Join(side, "tokenizer.json"), filepath.Join(dir, tok), stops); err != nil {
			return nil, err
		}
		cfg.URLTokenizerModel = tok
	}
	if _, err := axllm.ReadPostConfig(filepath.Join(dir, axllm.PostConfigName)); err != nil {
		post := axllm.PostConfigFrom(gen)
		if err := axllm.WriteJSON(filepath.Join(dir, axllm.PostConfigName), &post); err != nil {
			return nil, err
		}
	}
	// The backup is a hard link, so config.json stays in place until the
	// new one is renamed over it: a kill in between leaves the old file,
	// never none (rename only where links are impossible).
	target := filepath.Join(dir, axllm.ConfigName)
	if _, err := os.Lstat(target + ".orig"); errors.Is(err, os.ErrNotExist) {
		if err := os.Link(target, target+".orig"); err != nil && !errors.Is(err, os.ErrNotExist) {
			if err := os.Rename(target, target+".orig"); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
	}
	if err := axllm.WriteJSON(target, cfg); err != nil {
		return nil, err
	}
	return axllm.Verify(dir)
}

// findSidecar finds the Hugging Face config beside a compiled model
// (axllm.SidecarConfigs) that gives its hidden_size.
func findSidecar(dir string) (string, *hfconfig.Config, error) {
	for _, c := range axllm.SidecarConfigs(dir) {
		cfg, err := hfconfig.Load(c)
		if err == nil && cfg.Text().HiddenSize > 0 {
			return filepath.Dir(c), cfg, nil
		}
	}
	return "", nil, fmt.Errorf("%s: no *tokenizer*/config.json with the model's hidden_size: copy the Hugging Face config.json and tokenizer files into %s/tokenizer/", dir, dir)
}
