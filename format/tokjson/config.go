package tokjson

import (
	"encoding/json"
	"os"
	"path/filepath"
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
}

// LoadConfig reads DIR/tokenizer_config.json (missing file: empty Config)
// and DIR/chat_template.jinja, which newer transformers versions write
// instead of the chat_template key.
func LoadConfig(dir string) (*Config, error) {
	c := &Config{}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err == nil {
		var raw struct {
			BOS          json.RawMessage `json:"bos_token"`
			EOS          json.RawMessage `json:"eos_token"`
			Pad          json.RawMessage `json:"pad_token"`
			Unk          json.RawMessage `json:"unk_token"`
			AddBOS       *bool           `json:"add_bos_token"`
			AddEOS       *bool           `json:"add_eos_token"`
			ChatTemplate json.RawMessage `json:"chat_template"`
			Class        string          `json:"tokenizer_class"`
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, &os.PathError{Op: "parse", Path: filepath.Join(dir, "tokenizer_config.json"), Err: err}
		}
		c.BOSToken, c.EOSToken = tokenString(raw.BOS), tokenString(raw.EOS)
		c.PadToken, c.UnkToken = tokenString(raw.Pad), tokenString(raw.Unk)
		c.AddBOS, c.AddEOS, c.Class = raw.AddBOS, raw.AddEOS, raw.Class
		c.ChatTemplate = chatTemplate(raw.ChatTemplate)
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	if t, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil && c.ChatTemplate == "" {
		c.ChatTemplate = string(t)
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
