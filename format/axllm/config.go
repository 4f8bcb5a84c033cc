package axllm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Config is the runtime's config.json (axera.md §8). The first nine fields
// are required by axllm; keys this struct does not name are kept in Extra
// so a read-modify-write keeps them.
type Config struct {
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

// requiredKeys are the keys axllm fails without ("Key not found: <key>").
var requiredKeys = []string{"model_name", "tokenizer_type", "url_tokenizer_model", "template_filename_axmodel",
	"axmodel_num", "filename_post_axmodel", "filename_tokens_embed", "tokens_embed_num", "tokens_embed_size"}

// MarshalJSON writes the named fields, then Extra.
func (c *Config) MarshalJSON() ([]byte, error) {
	type plain Config
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

// ReadConfig reads DIR/config.json (or a config file path) as the
// runtime's config, failing as axllm would: empty file, a Hugging Face
// config in its place, a missing or mistyped required key.
func ReadConfig(path string) (*Config, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, ConfigName)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(b, path)
}

// ParseConfig is ReadConfig over bytes; name is used in errors.
func ParseConfig(b []byte, name string) (*Config, error) {
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
	for _, k := range requiredKeys {
		if _, ok := raw[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: required key(s) %s missing (axllm fails with \"Key not found: %s\")", name, strings.Join(missing, ", "), missing[0])
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: key %q holds %s, want %s", name, te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	known := map[string]bool{}
	for _, k := range jsonKeys(Config{}) {
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
func (c *Config) LayerFile(i int) string {
	return strings.Replace(c.TemplateFilenameAxmodel, "%d", strconv.Itoa(i), 1)
}

// jsonKeys lists the JSON names of a struct's fields, sorted.
func jsonKeys(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
