package api

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EmbeddingRequest is OpenAI's POST /v1/embeddings.
type EmbeddingRequest struct {
	Model string         `json:"model"`
	Input EmbeddingInput `json:"input"`
	// EncodingFormat is "float" (the default) or "base64": each vector's
	// float32 components, little-endian, base64-encoded.
	EncodingFormat string `json:"encoding_format,omitempty"`
	// Dimensions keeps the first N components, renormalised.
	Dimensions *int   `json:"dimensions,omitempty"`
	User       string `json:"user,omitempty"`
	// KeepAlive is an extension, as on the other /v1 routes.
	KeepAlive *Duration `json:"keep_alive,omitempty"`
}

// EmbeddingInput is OpenAI's input: a string, an array of strings, an
// array of token ids, or an array of token-id arrays. Exactly one of
// Texts and Tokens is set after decoding.
type EmbeddingInput struct {
	Texts  []string
	Tokens [][]int
}

// UnmarshalJSON takes the four shapes and names the field when it is
// none of them.
func (in *EmbeddingInput) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	bad := &FieldError{Field: "input", Msg: "input must be a string, an array of strings, an array of token ids or an array of token-id arrays"}
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return bad
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return bad
		}
		in.Texts = []string{s}
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return bad
	}
	if len(raw) == 0 {
		return &FieldError{Field: "input", Msg: "input is an empty array: send at least one string or token array"}
	}
	switch bytes.TrimSpace(raw[0])[0] {
	case '"':
		if err := json.Unmarshal(b, &in.Texts); err != nil {
			return &FieldError{Field: "input", Msg: "input mixes strings with other values: send an array of strings only"}
		}
	case '[':
		if err := json.Unmarshal(b, &in.Tokens); err != nil {
			return &FieldError{Field: "input", Msg: "input mixes token arrays with other values, or a token id is not an integer: send an array of integer arrays only"}
		}
	default:
		var ids []int
		if err := json.Unmarshal(b, &ids); err != nil {
			return &FieldError{Field: "input", Msg: "input mixes token ids with other values, or a token id is not an integer: send an array of integers only"}
		}
		in.Tokens = [][]int{ids}
	}
	return nil
}

// Len is the number of inputs.
func (in EmbeddingInput) Len() int { return len(in.Texts) + len(in.Tokens) }

// EmbeddingList is /v1/embeddings' answer.
type EmbeddingList struct {
	Object string            `json:"object"` // list
	Data   []EmbeddingObject `json:"data"`
	Model  string            `json:"model"`
	Usage  EmbeddingUsage    `json:"usage"`
}

// EmbeddingObject is one vector: []float32, or a base64 string.
type EmbeddingObject struct {
	Object    string `json:"object"` // embedding
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// EmbeddingUsage is an embedding answer's usage (no completion tokens).
type EmbeddingUsage struct {
	PromptTokens int      `json:"prompt_tokens"`
	TotalTokens  int      `json:"total_tokens"`
	Metrics      *Metrics `json:"metrics,omitempty"`
}

// EmbedRequest is Ollama's POST /api/embed.
type EmbedRequest struct {
	Model string          `json:"model"`
	Input OllamaEmbedText `json:"input"`
	// Truncate (default true) cuts inputs longer than the context to it;
	// false makes them a 400.
	Truncate   *bool     `json:"truncate,omitempty"`
	Dimensions int       `json:"dimensions,omitempty"`
	KeepAlive  *Duration `json:"keep_alive,omitempty"`
	Options    *Options  `json:"options,omitempty"`
}

// OllamaEmbedText is /api/embed's input: a string or an array of strings
// (absent or "": no input, which only loads the model).
type OllamaEmbedText []string

// UnmarshalJSON takes a string or an array of strings.
func (t *OllamaEmbedText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*t = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return &FieldError{Field: "input", Msg: fmt.Sprintf("input: %v", err)}
		}
		if s == "" {
			*t = nil
		} else {
			*t = OllamaEmbedText{s}
		}
		return nil
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return &FieldError{Field: "input", Msg: "input must be a string or an array of strings"}
	}
	*t = ss
	return nil
}

// EmbedResponse is /api/embed's answer.
type EmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration,omitempty"`
	LoadDuration    int64       `json:"load_duration,omitempty"`
	PromptEvalCount int         `json:"prompt_eval_count,omitempty"`
}

// EmbeddingsRequest is Ollama's legacy POST /api/embeddings.
type EmbeddingsRequest struct {
	Model     string    `json:"model"`
	Prompt    string    `json:"prompt"`
	KeepAlive *Duration `json:"keep_alive,omitempty"`
	Options   *Options  `json:"options,omitempty"`
}

// EmbeddingsResponse is /api/embeddings' answer (float64, as Ollama).
type EmbeddingsResponse struct {
	Embedding []float64 `json:"embedding"`
}
