package pulsar2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgectl/edgectl/format/hfconfig"
)

// IsCompiledDir reports whether dir holds pulsar2 output (a post model or
// a layer-0 file), whatever state its config.json is in.
func IsCompiledDir(dir string) bool {
	for _, pat := range []string{"*_post.axmodel", "*_p*_l0_together.axmodel"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pat)); len(m) > 0 {
			return true
		}
	}
	return false
}

// CompiledDir describes an ax-llm directory as far as it can be read:
// fields whose source is missing or broken stay zero, and the reason is in
// the matching *Err field.
type CompiledDir struct {
	Dir           string       `json:"dir"`
	Config        *AxllmConfig `json:"axllm_config,omitempty"`
	ConfigErr     string       `json:"config_error,omitempty"`
	ConfigBytes   int64        `json:"config_bytes"`
	Layout        *Layout      `json:"layout,omitempty"` // the .axmodel files found
	LayoutErr     string       `json:"layout_error,omitempty"`
	EmbedBytes    int64        `json:"embedding_bytes,omitempty"`
	Post          *PostConfig  `json:"post_config,omitempty"`
	PostErr       string       `json:"post_config_error,omitempty"`
	Build         *BuildInfo   `json:"build,omitempty"` // edgectl_build.json, when edgectl built it
	KVCacheLen    int          `json:"kv_cache_len,omitempty"`
	MaxPositions  int          `json:"max_position_embeddings,omitempty"` // the sidecar HF config's
	SidecarConfig string       `json:"sidecar_config,omitempty"`          // *tokenizer*/config.json, where axllm reads sliding_window
	Stubs         []string     `json:"empty_files,omitempty"`             // 0-byte files (Hub repos ship stubs)
}

// DescribeCompiled reads everything it can of an ax-llm directory.
func DescribeCompiled(dir string) *CompiledDir {
	d := &CompiledDir{Dir: dir}
	cfgPath := filepath.Join(dir, AxllmConfigName)
	if n, err := fileSize(cfgPath); err == nil {
		d.ConfigBytes = n
	}
	if c, err := ReadAxllmConfig(cfgPath); err != nil {
		d.ConfigErr = err.Error()
	} else {
		d.Config = c
	}
	if l, err := DiscoverLayout(dir); err != nil {
		d.LayoutErr = err.Error()
	} else {
		d.Layout = l
	}
	embed := EmbedFileName
	if d.Config != nil && d.Config.FilenameTokensEmbed != "" {
		embed = d.Config.FilenameTokensEmbed
	}
	d.EmbedBytes, _ = fileSize(filepath.Join(dir, embed))
	post := PostConfigName
	if d.Config != nil && d.Config.PostConfigPath != "" {
		post = d.Config.PostConfigPath
	}
	if p, err := ReadPostConfig(filepath.Join(dir, post)); err != nil {
		d.PostErr = err.Error()
	} else {
		d.Post = p
	}
	if bi, err := ReadBuildInfo(dir); err == nil {
		d.Build, d.KVCacheLen = bi, bi.KVCacheLen
	}
	if side, _ := filepath.Glob(filepath.Join(dir, "*tokenizer*", "config.json")); len(side) > 0 {
		d.SidecarConfig = side[0]
		if hc, err := hfconfig.Load(side[0]); err == nil {
			d.MaxPositions = hc.Text().MaxPositionEmbeddings
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			d.Stubs = append(d.Stubs, e.Name())
		}
	}
	return d
}

// KeyProblem is one required ax-llm config key that is missing or has the
// wrong JSON type.
type KeyProblem struct {
	Key  string `json:"key"`
	Got  string `json:"got"`  // "missing", or the JSON type found with its value
	Want string `json:"want"` // string, integer, boolean
}

// axllmKeyTypes are the JSON types axllm's loader (nlohmann::json get<T>)
// needs: the nine required keys (axera.md §8) and the optional booleans.
var axllmKeyTypes = map[string]string{
	"model_name": "string", "tokenizer_type": "string", "url_tokenizer_model": "string",
	"template_filename_axmodel": "string", "filename_post_axmodel": "string", "filename_tokens_embed": "string",
	"axmodel_num": "integer", "tokens_embed_num": "integer", "tokens_embed_size": "integer",
	"bos": "boolean", "eos": "boolean", "use_mmap_load_embed": "boolean",
}

// AxllmKeyProblems lists every required key that is missing and every
// known key whose JSON type axllm would reject ("type must be number, but
// is string"), not just the first. b must be a JSON object.
func AxllmKeyProblems(b []byte) ([]KeyProblem, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	var out []KeyProblem
	for _, k := range axllmRequired {
		if _, ok := raw[k]; !ok {
			out = append(out, KeyProblem{Key: k, Got: "missing", Want: axllmKeyTypes[k]})
		}
	}
	keys := make([]string, 0, len(axllmKeyTypes))
	for k := range axllmKeyTypes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := raw[k]
		if !ok {
			continue
		}
		if got := jsonType(v); got != axllmKeyTypes[k] {
			out = append(out, KeyProblem{Key: k, Got: fmt.Sprintf("%s %s", got, bytes.TrimSpace(v)), Want: axllmKeyTypes[k]})
		}
	}
	return out, nil
}

func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch c := v[0]; {
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '[':
		return "array"
	case c == '{':
		return "object"
	case strings.ContainsAny(string(v), ".eE"):
		return "number"
	default:
		return "integer"
	}
}
