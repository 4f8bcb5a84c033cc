package pulsar2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// File names of a built model directory.
const (
	AxllmConfigName = "config.json"      // ax-llm schema, read by axllm run|serve
	PostConfigName  = "post_config.json" // sampling settings
	BuildInfoName   = "edgectl_build.json"
	TokenizerDir    = "tokenizer" // HF tokenizer files and config.json (axllm's *tokenizer*/config.json sidecar)
)

// AxllmConfig is the ax-llm config.json (axera.md §8). The first nine fields
// are required by axllm; keys this struct does not name are kept in Extra so
// a read-modify-write keeps them.
type AxllmConfig struct {
	ModelName               string `json:"model_name"`
	TokenizerType           string `json:"tokenizer_type"`
	URLTokenizerModel       string `json:"url_tokenizer_model"`
	TemplateFilenameAxmodel string `json:"template_filename_axmodel"`
	AxmodelNum              int    `json:"axmodel_num"`
	FilenamePostAxmodel     string `json:"filename_post_axmodel"`
	FilenameTokensEmbed     string `json:"filename_tokens_embed"`
	TokensEmbedNum          int    `json:"tokens_embed_num"`
	TokensEmbedSize         int    `json:"tokens_embed_size"`

	SystemPrompt     string `json:"system_prompt,omitempty"`
	PostConfigPath   string `json:"post_config_path,omitempty"`
	Bos              *bool  `json:"bos,omitempty"`
	Eos              *bool  `json:"eos,omitempty"`
	PadTokenID       *int   `json:"pad_token_id,omitempty"`
	EnableThinking   *bool  `json:"enable_thinking,omitempty"`
	UseMmapLoadEmbed *bool  `json:"use_mmap_load_embed,omitempty"`
	SlidingWindow    int    `json:"sliding_window,omitempty"`
	Port             int    `json:"port,omitempty"`
	Devices          []int  `json:"devices,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// axllmRequired are the keys axllm fails without ("Key not found: <key>").
var axllmRequired = []string{"model_name", "tokenizer_type", "url_tokenizer_model", "template_filename_axmodel",
	"axmodel_num", "filename_post_axmodel", "filename_tokens_embed", "tokens_embed_num", "tokens_embed_size"}

// MarshalJSON writes the named fields, then Extra, with 4-space indentation
// like the configs AXERA ships.
func (c *AxllmConfig) MarshalJSON() ([]byte, error) {
	type plain AxllmConfig
	b, err := json.Marshal((*plain)(c))
	if err != nil || len(c.Extra) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range c.Extra {
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// ReadAxllmConfig reads DIR/config.json (or a config file path) as an
// ax-llm config, failing as axllm would: empty file, a Hugging Face config
// in its place, a missing or mistyped required key.
func ReadAxllmConfig(path string) (*AxllmConfig, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, AxllmConfigName)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseAxllmConfig(b, path)
}

// ParseAxllmConfig is ReadAxllmConfig over bytes; name is used in errors.
func ParseAxllmConfig(b []byte, name string) (*AxllmConfig, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s: file is empty (%d bytes); axllm fails with \"parse error … empty input\": regenerate it with `edgectl pulsar2 build`", name, len(b))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v", name, err)
	}
	if _, ok := raw["model_name"]; !ok {
		if _, hf := raw["architectures"]; hf {
			return nil, fmt.Errorf("%s: this is a Hugging Face config.json, not an ax-llm one (axllm reads model_name, template_filename_axmodel, …): build the directory with `edgectl pulsar2 build`", name)
		}
	}
	var missing []string
	for _, k := range axllmRequired {
		if _, ok := raw[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: required key(s) %s missing (axllm fails with \"Key not found: %s\")", name, strings.Join(missing, ", "), missing[0])
	}
	var c AxllmConfig
	if err := json.Unmarshal(b, &c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: key %q holds %s, want %s", name, te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	known := map[string]bool{}
	for _, k := range jsonKeys(AxllmConfig{}) {
		known[k] = true
	}
	for k, v := range raw {
		if !known[k] {
			if c.Extra == nil {
				c.Extra = map[string]json.RawMessage{}
			}
			c.Extra[k] = v
		}
	}
	if !strings.Contains(c.TemplateFilenameAxmodel, "%d") {
		return nil, fmt.Errorf("%s: template_filename_axmodel %q has no %%d for the layer index", name, c.TemplateFilenameAxmodel)
	}
	if c.AxmodelNum <= 0 || c.TokensEmbedNum <= 0 || c.TokensEmbedSize <= 0 {
		return nil, fmt.Errorf("%s: axmodel_num, tokens_embed_num and tokens_embed_size must be positive (got %d, %d, %d)", name, c.AxmodelNum, c.TokensEmbedNum, c.TokensEmbedSize)
	}
	return &c, nil
}

// LayerFile is the file name of layer i.
func (c *AxllmConfig) LayerFile(i int) string {
	return strings.Replace(c.TemplateFilenameAxmodel, "%d", strconv.Itoa(i), 1)
}

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

// jsonKeys lists the JSON names of a struct's fields, sorted.
func jsonKeys(v any) []string {
	out := tagKeys(v)
	sort.Strings(out)
	return out
}

// Layout is what pulsar2 wrote: one <prefix>_p<prefill>_l<i>_together.axmodel
// per layer and a <prefix>_post.axmodel.
type Layout struct {
	Prefix   string `json:"prefix"`
	Prefill  int    `json:"prefill"`
	Layers   int    `json:"layers"`
	Template string `json:"template"` // with %d
	Post     string `json:"post"`
}

var layerFile = regexp.MustCompile(`^(.+)_p(\d+)_l(\d+)_together\.axmodel$`)

// DiscoverLayout finds the compiled files in dir (axera.md §5: glob
// *_p*_l0_together.axmodel and *_post.axmodel) and checks the layer files
// run 0..n-1 without gaps.
func DiscoverLayout(dir string) (*Layout, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type series struct {
		prefill int
		idx     map[int]bool
	}
	found := map[string]*series{} // key prefix_pN
	for _, e := range ents {
		m := layerFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		key := m[1] + "_p" + m[2]
		s := found[key]
		if s == nil {
			p, _ := strconv.Atoi(m[2])
			s = &series{prefill: p, idx: map[int]bool{}}
			found[key] = s
		}
		i, _ := strconv.Atoi(m[3])
		s.idx[i] = true
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: no *_p*_l0_together.axmodel layer files", dir)
	}
	if len(found) > 1 {
		var keys []string
		for k := range found {
			keys = append(keys, k+"_l%d")
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("%s: layer files of more than one build (%s); keep one", dir, strings.Join(keys, ", "))
	}
	var l Layout
	for key, s := range found {
		l.Prefix = strings.TrimSuffix(key, "_p"+strconv.Itoa(s.prefill))
		l.Prefill = s.prefill
		for i := 0; s.idx[i]; i++ {
			l.Layers = i + 1
		}
		if l.Layers != len(s.idx) {
			return nil, fmt.Errorf("%s: layer files %s_l*_together.axmodel have a gap after layer %d (%d files)", dir, key, l.Layers-1, len(s.idx))
		}
		l.Template = key + "_l%d_together.axmodel"
	}
	l.Post = l.Prefix + "_post.axmodel"
	if _, err := os.Stat(filepath.Join(dir, l.Post)); err != nil {
		posts, _ := filepath.Glob(filepath.Join(dir, "*_post.axmodel"))
		if len(posts) != 1 {
			return nil, fmt.Errorf("%s: no post model %s", dir, l.Post)
		}
		l.Post = filepath.Base(posts[0])
	}
	return &l, nil
}

// VerifyError lists everything wrong with a built directory.
type VerifyError struct {
	Dir      string
	Problems []string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%s is not loadable by axllm: %s", e.Dir, strings.Join(e.Problems, "; "))
}

// VerifyOutput checks that dir is loadable by `axllm run|serve` as it is:
// the ax-llm config.json parses with every required key, one layer file per
// axmodel_num and nothing beyond, the post model, the embedding of exactly
// tokens_embed_num × tokens_embed_size × 2 bytes, the tokenizer file and a
// complete post_config.json. It returns the config.
func VerifyOutput(dir string) (*AxllmConfig, error) {
	c, err := ReadAxllmConfig(filepath.Join(dir, AxllmConfigName))
	if err != nil {
		return nil, &VerifyError{Dir: dir, Problems: []string{err.Error()}}
	}
	var probs []string
	need := func(rel, what string) bool {
		if rel == "" {
			probs = append(probs, what+" not set")
			return false
		}
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			probs = append(probs, fmt.Sprintf("%s %s missing", what, rel))
			return false
		}
		return true
	}
	for i := 0; i < c.AxmodelNum; i++ {
		need(c.LayerFile(i), "layer")
	}
	if _, err := os.Stat(filepath.Join(dir, c.LayerFile(c.AxmodelNum))); err == nil {
		probs = append(probs, fmt.Sprintf("%s exists but axmodel_num is %d: the config and the build disagree", c.LayerFile(c.AxmodelNum), c.AxmodelNum))
	}
	need(c.FilenamePostAxmodel, "post model")
	if need(c.FilenameTokensEmbed, "embedding") {
		n, _ := fileSize(filepath.Join(dir, c.FilenameTokensEmbed))
		if want := embedFileSize(c.TokensEmbedNum, c.TokensEmbedSize); n != want {
			probs = append(probs, fmt.Sprintf("embedding %s is %d bytes, want tokens_embed_num × tokens_embed_size × 2 = %d × %d × 2 = %d (ax-llm#62: a mismatch fails silently)",
				c.FilenameTokensEmbed, n, c.TokensEmbedNum, c.TokensEmbedSize, want))
		}
	}
	if strings.Contains(c.URLTokenizerModel, "://") {
		probs = append(probs, fmt.Sprintf("url_tokenizer_model %q is a URL; axllm reads a local tokenizer file", c.URLTokenizerModel))
	} else {
		need(c.URLTokenizerModel, "tokenizer")
	}
	post := c.PostConfigPath
	if post == "" {
		post = PostConfigName
	}
	if need(post, "post config") {
		if _, err := ReadPostConfig(filepath.Join(dir, post)); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if len(probs) > 0 {
		return c, &VerifyError{Dir: dir, Problems: probs}
	}
	return c, nil
}

// BuildInfo is edgectl_build.json: how the directory was built. axllm does
// not read it; serve and prep use it for the context length and provenance.
type BuildInfo struct {
	Tool          string   `json:"tool"` // "edgectl pulsar2 build"
	PulsarVersion string   `json:"pulsar2_version"`
	Image         string   `json:"image"`
	Pulsar2Bin    string   `json:"pulsar2_bin,omitempty"` // the native compiler (--pulsar2-bin), instead of an image
	Builder       string   `json:"builder"`
	Chip          string   `json:"chip"`
	KVCacheLen    int      `json:"kv_cache_len"`
	PrefillLen    int      `json:"prefill_len"`
	PrefillGroups []int    `json:"prefill_groups,omitempty"`
	WeightType    string   `json:"weight_type"`
	Shim          []string `json:"shim,omitempty"`
	Source        string   `json:"source"`
}

// ReadBuildInfo reads DIR/edgectl_build.json.
func ReadBuildInfo(dir string) (*BuildInfo, error) {
	b, err := os.ReadFile(filepath.Join(dir, BuildInfoName))
	if err != nil {
		return nil, err
	}
	var bi BuildInfo
	if err := json.Unmarshal(b, &bi); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, BuildInfoName), err)
	}
	return &bi, nil
}
