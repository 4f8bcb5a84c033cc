package axllm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// KeyProblem is one required config key that is missing or has the wrong
// JSON type.
type KeyProblem struct {
	Key  string `json:"key"`
	Got  string `json:"got"`  // "missing", or the JSON type found with its value
	Want string `json:"want"` // string, integer, boolean
}

// keyTypes are the JSON types axllm's loader (nlohmann::json get<T>) needs:
// the nine required keys (axera.md §8) and the optional booleans.
var keyTypes = map[string]string{
	"model_name": "string", "tokenizer_type": "string", "url_tokenizer_model": "string",
	"template_filename_axmodel": "string", "filename_post_axmodel": "string", "filename_tokens_embed": "string",
	"axmodel_num": "integer", "tokens_embed_num": "integer", "tokens_embed_size": "integer",
	"bos": "boolean", "eos": "boolean", "use_mmap_load_embed": "boolean",
}

// KeyProblems lists every required key that is missing and every known key
// whose JSON type axllm would reject ("type must be number, but is
// string"), not just the first. b must be a JSON object.
func KeyProblems(b []byte) ([]KeyProblem, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	var out []KeyProblem
	for _, k := range requiredKeys {
		if _, ok := raw[k]; !ok {
			out = append(out, KeyProblem{Key: k, Got: "missing", Want: keyTypes[k]})
		}
	}
	keys := make([]string, 0, len(keyTypes))
	for k := range keyTypes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := raw[k]
		if !ok {
			continue
		}
		if got := jsonType(v); got != keyTypes[k] {
			out = append(out, KeyProblem{Key: k, Got: fmt.Sprintf("%s %s", got, bytes.TrimSpace(v)), Want: keyTypes[k]})
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
