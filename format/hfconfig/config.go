// Package hfconfig reads Hugging Face model configs (config.json,
// generation_config.json) into a typed view, and edits them with minimal
// diffs. It is edgectl's only config.json parser.
package hfconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/edgectl/edgectl/format/internal/modelfile"
)

// IDs is a token-id field that configs write as a number, an array or null
// (eos_token_id: 2, or [1, 106]).
type IDs []int

// UnmarshalJSON accepts a number, an array of numbers, or null.
func (ids *IDs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*ids = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var a []int
		if err := json.Unmarshal(b, &a); err != nil {
			return err
		}
		*ids = a
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*ids = IDs{n}
	return nil
}

// Config is the typed view of the config.json fields edgectl uses. Raw keeps
// the file's bytes for minimal-diff edits.
type Config struct {
	Path string `json:"-"`
	Raw  []byte `json:"-"`
	// IsArray records which id fields the file spells as arrays.
	EosIsArray bool `json:"-"`

	Architectures         []string       `json:"architectures"`
	ModelType             string         `json:"model_type"`
	HiddenSize            int            `json:"hidden_size"`
	IntermediateSize      int            `json:"intermediate_size"`
	NumHiddenLayers       int            `json:"num_hidden_layers"`
	NumAttentionHeads     int            `json:"num_attention_heads"`
	NumKeyValueHeads      int            `json:"num_key_value_heads"`
	HeadDim               int            `json:"head_dim"`
	VocabSize             int            `json:"vocab_size"`
	MaxPositionEmbeddings int            `json:"max_position_embeddings"`
	RMSNormEps            float64        `json:"rms_norm_eps"`
	LayerNormEps          float64        `json:"layer_norm_eps"`  // BERT-family encoders
	TypeVocabSize         int            `json:"type_vocab_size"` // BERT: token-type (segment) embeddings
	RopeTheta             float64        `json:"rope_theta"`
	RopeScaling           map[string]any `json:"rope_scaling"`
	HiddenAct             string         `json:"hidden_act"`
	AttentionBias         *bool          `json:"attention_bias"`
	TieWordEmbeddings     *bool          `json:"tie_word_embeddings"`
	BosTokenID            IDs            `json:"bos_token_id"`
	EosTokenID            IDs            `json:"eos_token_id"`
	PadTokenID            IDs            `json:"pad_token_id"`
	TorchDType            string         `json:"torch_dtype"`
	DType                 string         `json:"dtype"` // transformers ≥ 4.56 name
	QuantizationConfig    map[string]any `json:"quantization_config"`
	NumExperts            int            `json:"num_experts"`
	NumLocalExperts       int            `json:"num_local_experts"`
	NRoutedExperts        int            `json:"n_routed_experts"`
	KVCacheLen            int            `json:"kv_cache_len"` // written by `edgectl patch config --kv-cache-len`
	SlidingWindow         *int           `json:"sliding_window"`
	TextConfig            *Config        `json:"text_config"` // multimodal wrappers (Gemma 3, Qwen-VL)
}

// Text returns the language-model part of the config: text_config when the
// file wraps one (multimodal checkpoints), else the config itself.
func (c *Config) Text() *Config {
	if c.TextConfig != nil && c.TextConfig.HiddenSize > 0 {
		return c.TextConfig
	}
	return c
}

// HeadDimension is head_dim, or hidden_size/num_attention_heads.
func (c *Config) HeadDimension() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	if c.NumAttentionHeads > 0 {
		return c.HiddenSize / c.NumAttentionHeads
	}
	return 0
}

// KVHeads is num_key_value_heads, defaulting to num_attention_heads.
func (c *Config) KVHeads() int {
	if c.NumKeyValueHeads > 0 {
		return c.NumKeyValueHeads
	}
	return c.NumAttentionHeads
}

// Tied reports whether the LM head shares the embedding matrix. HF's default
// is true for most architectures when the key is absent.
func (c *Config) Tied() bool { return c.TieWordEmbeddings == nil || *c.TieWordEmbeddings }

// Experts is the MoE expert count under whichever key the family uses.
func (c *Config) Experts() int {
	return max(c.NumExperts, c.NumLocalExperts, c.NRoutedExperts)
}

// WeightDType is torch_dtype or its newer name dtype.
func (c *Config) WeightDType() string {
	if c.TorchDType != "" {
		return c.TorchDType
	}
	return c.DType
}

// Arch is the first architectures entry, or model_type.
func (c *Config) Arch() string {
	if len(c.Architectures) > 0 {
		return c.Architectures[0]
	}
	return c.ModelType
}

// Error kinds for Load; test with errors.Is.
var (
	ErrMissing = errors.New("missing")
	ErrEmpty   = errors.New("empty")
	ErrInvalid = errors.New("invalid")
)

// LoadError explains why a config could not be read and how to fix it.
type LoadError struct {
	Path string
	Kind error // ErrMissing, ErrEmpty or ErrInvalid
	Msg  string
	Fix  string
}

func (e *LoadError) Error() string {
	s := e.Path + ": " + e.Msg
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	return s
}
func (e *LoadError) Unwrap() error { return e.Kind }

// MaxFileSize caps config.json and generation_config.json; real ones are a
// few kilobytes (a classifier's id2label map can reach a megabyte).
const MaxFileSize = 16 << 20

// Load reads a config file. A directory argument means DIR/config.json.
// The file must be a regular file (or a symlink to one) of at most
// MaxFileSize bytes; a FIFO or device is refused without blocking.
func Load(path string) (*Config, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	b, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &LoadError{Path: path, Kind: ErrMissing, Msg: "no such file",
			Fix: "a Hugging Face checkpoint directory needs config.json; pull the full repository"}
	}
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// readFile reads a config through modelfile, reporting what it refuses as
// a LoadError of kind ErrInvalid.
func readFile(path string) ([]byte, error) {
	b, err := modelfile.ReadFile(path, MaxFileSize, "a config file")
	var me *modelfile.Error
	if errors.As(err, &me) {
		return nil, &LoadError{Path: me.Path, Kind: ErrInvalid, Msg: me.Msg, Fix: me.Fix}
	}
	return b, err
}

// Parse decodes config bytes; name is used in errors.
func Parse(b []byte, name string) (*Config, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, &LoadError{Path: name, Kind: ErrEmpty, Msg: fmt.Sprintf("file is empty (%d bytes)", len(b)),
			Fix: "vendor runtimes crash on stub configs; restore the upstream config.json from the original Hugging Face repository"}
	}
	if !utf8.Valid(b) {
		return nil, &LoadError{Path: name, Kind: ErrInvalid, Msg: fmt.Sprintf("not valid UTF-8 at byte %d", firstBad(b)),
			Fix: "config.json must be UTF-8 JSON; re-download it"}
	}
	if trimmed := bytes.TrimLeft(b, " \t\r\n"); trimmed[0] != '{' {
		return nil, &LoadError{Path: name, Kind: ErrInvalid, Msg: fmt.Sprintf("top level is %s, not a JSON object", jsonKind(trimmed[0])),
			Fix: "restore the upstream file from the original Hugging Face repository"}
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, &LoadError{Path: name, Kind: ErrInvalid, Msg: "invalid JSON: " + describeJSONError(b, err),
			Fix: "fix the syntax or restore the upstream file"}
	}
	var probe map[string]json.RawMessage
	json.Unmarshal(b, &probe)
	if raw, ok := probe["eos_token_id"]; ok {
		c.EosIsArray = bytes.HasPrefix(bytes.TrimSpace(raw), []byte("["))
	}
	c.Path, c.Raw = name, b
	return &c, nil
}

// jsonKind names the JSON value starting with byte c.
func jsonKind(c byte) string {
	switch {
	case c == 'n':
		return "null"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return fmt.Sprintf("%q (not JSON)", c)
}

func describeJSONError(b []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64 = -1
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
		if te.Field != "" {
			return fmt.Sprintf("key %q holds %s, expected %s", te.Field, te.Value, te.Type)
		}
	}
	if off < 0 {
		return err.Error()
	}
	line, col := 1, 1
	for _, ch := range b[:min(int(off), len(b))] {
		if ch == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%v at line %d, column %d (byte %d)", err, line, col, off)
}

func firstBad(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
