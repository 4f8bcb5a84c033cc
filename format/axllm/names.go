package axllm

import (
	"os"
	"path/filepath"
)

// File names of a compiled directory (axera.md §5, §8).
const (
	ConfigName     = "config.json"      // the runtime's config, read by axllm run|serve
	PostConfigName = "post_config.json" // sampling settings
	BuildInfoName  = "edgectl_build.json"
	// TokenizerDir holds the Hugging Face tokenizer files and config.json:
	// the runtime reads sliding_window/layer_types from <dir>/*tokenizer*/config.json.
	TokenizerDir  = "tokenizer"
	EmbedFileName = "model.embed_tokens.weight.bfloat16.bin" // raw bf16, vocab × hidden
)

// Globs of the compiled models: one <prefix>_p<prefill>_l<i>_together.axmodel
// per layer and a <prefix>_post.axmodel.
const (
	PostModelGlob  = "*_post.axmodel"
	FirstLayerGlob = "*_p*_l0_together.axmodel"
)

// sidecarGlob finds the Hugging Face config beside the compiled models:
// tokenizer/config.json as edgectl writes it, any *tokenizer*/config.json
// as AXERA's repositories ship it (where the runtime itself looks).
var sidecarGlob = filepath.Join("*tokenizer*", "config.json")

// TokenizerFiles are the files the build copies into TokenizerDir when the
// checkpoint has them: the runtime reads the HF config.json there, and the
// serve lane renders chat templates from these files.
var TokenizerFiles = []string{
	"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
	"vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja", "chat_template.json",
	"config.json", "generation_config.json",
}

// IsCompiled reports whether dir holds pulsar2 output (a post model or a
// layer-0 file), whatever state its config.json is in.
func IsCompiled(dir string) bool {
	return HasPostModel(dir) || has(dir, FirstLayerGlob)
}

// HasPostModel reports whether dir holds a <prefix>_post.axmodel: the file
// every runtime build loads last, so the mark of a finished compile.
func HasPostModel(dir string) bool { return has(dir, PostModelGlob) }

func has(dir, pattern string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	return len(m) > 0
}

// SidecarConfigs lists the *tokenizer*/config.json files of dir.
func SidecarConfigs(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, sidecarGlob))
	return m
}

// EmbedBytes is the embedding file's size the runtime expects:
// tokens_embed_num × tokens_embed_size bf16 values (ax-llm#62: any other
// size fails silently).
func EmbedBytes(vocab, hidden int) int64 { return int64(vocab) * int64(hidden) * 2 }

// PostConfigFile is the post_config.json the runtime reads for c:
// post_config_path (relative to dir unless absolute), else
// dir/post_config.json. c may be nil (no readable config).
func PostConfigFile(dir string, c *Config) string { return resolve(dir, postConfigName(c)) }

func postConfigName(c *Config) string {
	if c != nil && c.PostConfigPath != "" {
		return c.PostConfigPath
	}
	return PostConfigName
}

// resolve is name as the runtime opens it: relative to the model directory
// unless absolute.
func resolve(dir, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(dir, name)
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
