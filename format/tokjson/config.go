package tokjson

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/format/internal/modelfile"
)

// Config is the part of tokenizer_config.json edgectl uses.
type Config struct {
	BOSToken     string
	EOSToken     string
	PadToken     string
	UnkToken     string
	AddBOS       *bool
	AddEOS       *bool
	ChatTemplate string // from tokenizer_config.json, or chat_template.jinja beside it
	Class        string
	// ModelMaxLength is model_max_length: the longest input the model
	// takes, in tokens; 0 when absent or a "no limit" sentinel (1e30).
	ModelMaxLength int
}

// LoadConfig reads DIR/tokenizer_config.json (missing file: empty Config)
// and DIR/chat_template.jinja, which newer transformers versions write
// instead of the chat_template key. Both must be regular files (or
// symlinks to one) of at most MaxConfigSize bytes.
func LoadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "tokenizer_config.json")
	b, err := modelfile.ReadFile(path, MaxConfigSize, "a tokenizer_config.json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	c := &Config{}
	if err == nil {
		if c, err = parseConfig(b, path); err != nil {
			return nil, err
		}
	}
	if c.ChatTemplate == "" {
		t, err := modelfile.ReadFile(filepath.Join(dir, "chat_template.jinja"), MaxConfigSize, "a chat template")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		c.ChatTemplate = string(t)
	}
	return c, nil
}

// parseConfig decodes tokenizer_config.json bytes; path is used in errors.
func parseConfig(b []byte, path string) (*Config, error) {
	var raw struct {
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
		Pad          json.RawMessage `json:"pad_token"`
		Unk          json.RawMessage `json:"unk_token"`
		AddBOS       *bool           `json:"add_bos_token"`
		AddEOS       *bool           `json:"add_eos_token"`
		ChatTemplate json.RawMessage `json:"chat_template"`
		Class        string          `json:"tokenizer_class"`
		MaxLength    *float64        `json:"model_max_length"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, &os.PathError{Op: "parse", Path: path, Err: err}
	}
	c := &Config{
		BOSToken: tokenString(raw.BOS), EOSToken: tokenString(raw.EOS),
		PadToken: tokenString(raw.Pad), UnkToken: tokenString(raw.Unk),
		AddBOS: raw.AddBOS, AddEOS: raw.AddEOS, Class: raw.Class,
		ChatTemplate: chatTemplate(raw.ChatTemplate),
	}
	// transformers writes int(1e30) for "no limit"; anything past an int32
	// is that sentinel, not a length.
	if m := raw.MaxLength; m != nil && *m >= 1 && *m < 1<<31 {
		c.ModelMaxLength = int(*m)
	}
	return c, nil
}

// tokenString accepts "tok" or {"content": "tok", …} (AddedToken form).
func tokenString(m json.RawMessage) string {
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	json.Unmarshal(m, &o)
	return o.Content
}

// chatTemplate accepts a string or a list of {name, template}, picking
// "default".
func chatTemplate(m json.RawMessage) string {
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	var list []struct{ Name, Template string }
	if json.Unmarshal(m, &list) == nil {
		for _, t := range list {
			if t.Name == "default" {
				return t.Template
			}
		}
		if len(list) > 0 {
			return list[0].Template
		}
	}
	return ""
}
