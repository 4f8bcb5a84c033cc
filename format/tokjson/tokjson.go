// Package tokjson reads Hugging Face tokenizer files: tokenizer.json (the
// `tokenizers` library's serialization) and the parts of
// tokenizer_config.json that say which tokens are BOS/EOS and which chat
// template to use. It is edgectl's only parser of these files; the engine's
// tokenizer, the GGUF tokenizer metadata and the .htok sidecar build on it.
package tokjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgectl/edgectl/format/internal/modelfile"
)

// File is a parsed tokenizer.json.
type File struct {
	Path          string
	Model         Model
	AddedTokens   []AddedToken
	Normalizer    json.RawMessage // kept raw: component trees vary by family
	PreTokenizer  json.RawMessage
	PostProcessor json.RawMessage
	Decoder       json.RawMessage
}

// Model is the tokenizer model block ("BPE", "Unigram", "WordPiece", …).
type Model struct {
	Type         string         `json:"type"`
	Vocab        map[string]int `json:"-"` // BPE/WordPiece: token → id
	Merges       [][2]string    `json:"-"` // BPE: in rank order
	UnkToken     *string        `json:"unk_token"`
	ByteFallback bool           `json:"byte_fallback"`
	FuseUnk      bool           `json:"fuse_unk"`
	IgnoreMerges bool           `json:"ignore_merges"`
	// ContinuingSubwordPrefix and EndOfWordSuffix are rarely set for LLMs.
	ContinuingSubwordPrefix *string `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string `json:"end_of_word_suffix"`
	// MaxInputCharsPerWord is WordPiece's limit: a longer word is one unk (nil: 100).
	MaxInputCharsPerWord *int `json:"max_input_chars_per_word"`
}

// AddedToken is an entry of added_tokens.
type AddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// Limits on what a tokenizer file may declare, checked before anything is
// sized from it. The largest published vocabularies are ~260K tokens and
// their tokenizer.json ~35 MB.
const (
	// MaxVocab bounds every token id (and the Unigram piece count).
	MaxVocab = 1 << 24
	// idSlack is how far past its token count a file may number ids:
	// Tokens() allocates one slot per id up to the highest, so ids must be
	// roughly dense (padding a vocabulary is fine, 10^9 for 5 tokens not).
	idSlack = 1 << 16
	// MaxFileSize caps tokenizer.json.
	MaxFileSize = 256 << 20
	// MaxConfigSize caps tokenizer_config.json and chat_template.jinja.
	MaxConfigSize = 32 << 20
)

// Load reads tokenizer.json; a directory means DIR/tokenizer.json. The
// file must be a regular file (or a symlink to one) of at most MaxFileSize
// bytes; a FIFO or device is refused without blocking.
func Load(path string) (*File, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	b, err := modelfile.ReadFile(path, MaxFileSize, "a tokenizer.json")
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// Parse decodes tokenizer.json bytes.
func Parse(b []byte) (*File, error) {
	var raw struct {
		AddedTokens   []AddedToken    `json:"added_tokens"`
		Normalizer    json.RawMessage `json:"normalizer"`
		PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Decoder       json.RawMessage `json:"decoder"`
		Model         json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %v", err)
	}
	if len(raw.Model) == 0 {
		return nil, errors.New("not a tokenizer.json: no model block")
	}
	f := &File{AddedTokens: raw.AddedTokens, Normalizer: nullToNil(raw.Normalizer),
		PreTokenizer: nullToNil(raw.PreTokenizer), PostProcessor: nullToNil(raw.PostProcessor), Decoder: nullToNil(raw.Decoder)}
	if err := json.Unmarshal(raw.Model, &f.Model); err != nil {
		return nil, fmt.Errorf("model block: %v", err)
	}
	var mv struct {
		Vocab  json.RawMessage   `json:"vocab"`
		Merges []json.RawMessage `json:"merges"`
	}
	if err := json.Unmarshal(raw.Model, &mv); err != nil {
		return nil, fmt.Errorf("model block: %v", err)
	}
	if f.Model.Type == "" {
		f.Model.Type = "BPE" // old serializations omit it
	}
	if len(mv.Vocab) > 0 && mv.Vocab[0] == '{' {
		if err := json.Unmarshal(mv.Vocab, &f.Model.Vocab); err != nil {
			return nil, fmt.Errorf("model.vocab: %v", err)
		}
	} else if f.Model.Type != "Unigram" {
		return nil, fmt.Errorf("model.vocab of a %s tokenizer is not an object", f.Model.Type)
	} else {
		// Unigram: [[piece, score], …]; ids are positions.
		var pieces [][2]json.RawMessage
		if err := json.Unmarshal(mv.Vocab, &pieces); err != nil {
			return nil, fmt.Errorf("model.vocab: %v", err)
		}
		if len(pieces) > MaxVocab {
			return nil, fmt.Errorf("model.vocab has %d pieces, over the %d limit (the file is corrupt or hostile: restore the original tokenizer.json)", len(pieces), MaxVocab)
		}
		f.Model.Vocab = make(map[string]int, len(pieces))
		for i, p := range pieces {
			var s string
			json.Unmarshal(p[0], &s)
			f.Model.Vocab[s] = i
		}
	}
	// Merges are "a b" strings (tokenizers < 0.20) or ["a", "b"] pairs.
	f.Model.Merges = make([][2]string, 0, len(mv.Merges))
	for i, m := range mv.Merges {
		var pair [2]string
		if len(m) > 0 && m[0] == '[' {
			if err := json.Unmarshal(m, &pair); err != nil {
				return nil, fmt.Errorf("model.merges[%d]: %v", i, err)
			}
		} else {
			var s string
			if err := json.Unmarshal(m, &s); err != nil {
				return nil, fmt.Errorf("model.merges[%d]: %v", i, err)
			}
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("model.merges[%d]: %q is not a pair", i, s)
			}
			pair = [2]string{a, b}
		}
		f.Model.Merges = append(f.Model.Merges, pair)
	}
	if err := f.checkIDs(); err != nil {
		return nil, err
	}
	return f, nil
}

// checkIDs bounds every token id before anything is sized from them:
// Tokens() makes a table as long as the highest id.
func (f *File) checkIDs() error {
	n := len(f.Model.Vocab) + len(f.AddedTokens)
	if n == 0 {
		return errors.New("no tokens: model.vocab and added_tokens are both empty (restore the original tokenizer.json)")
	}
	limit := min(MaxVocab, 2*n+idSlack)
	bad := func(where string, id int) error {
		return fmt.Errorf("%s has id %d, outside 0..%d for a file of %d tokens (ids must be dense and below %d; the file is corrupt or hostile: restore the original tokenizer.json)",
			where, id, limit-1, n, MaxVocab)
	}
	for i, a := range f.AddedTokens {
		if a.ID < 0 || a.ID >= limit {
			return bad(fmt.Sprintf("added_tokens[%d] %q", i, a.Content), a.ID)
		}
	}
	// Map order is random: report the same (smallest) offender every run.
	found, worst, worstTok := false, 0, ""
	for s, id := range f.Model.Vocab {
		if (id < 0 || id >= limit) && (!found || s < worstTok) {
			found, worst, worstTok = true, id, s
		}
	}
	if found {
		return bad(fmt.Sprintf("model.vocab[%q]", worstTok), worst)
	}
	return nil
}

func nullToNil(m json.RawMessage) json.RawMessage {
	if bytes.Equal(bytes.TrimSpace(m), []byte("null")) {
		return nil
	}
	return m
}

// Tokens returns the vocabulary in id order, added tokens included. Ids
// that no token claims are "" (some checkpoints pad the vocab).
func (f *File) Tokens() []string {
	n := 0
	for _, id := range f.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range f.AddedTokens {
		n = max(n, a.ID+1)
	}
	out := make([]string, n)
	for s, id := range f.Model.Vocab {
		out[id] = s
	}
	for _, a := range f.AddedTokens {
		out[a.ID] = a.Content
	}
	return out
}

// ID looks a token up in the vocab or the added tokens.
func (f *File) ID(token string) (int, bool) {
	for _, a := range f.AddedTokens {
		if a.Content == token {
			return a.ID, true
		}
	}
	id, ok := f.Model.Vocab[token]
	return id, ok
}

// SpecialIDs returns the ids of added tokens marked special, ascending.
func (f *File) SpecialIDs() []int {
	var ids []int
	for _, a := range f.AddedTokens {
		if a.Special {
			ids = append(ids, a.ID)
		}
	}
	sort.Ints(ids)
	return ids
}

// IsByteLevel reports whether the tokenizer is GPT-2 style byte-level BPE
// (pre_tokenizer or decoder of type ByteLevel, possibly inside a Sequence).
func (f *File) IsByteLevel() bool {
	return bytes.Contains(f.PreTokenizer, []byte(`"ByteLevel"`)) || bytes.Contains(f.Decoder, []byte(`"ByteLevel"`))
}
