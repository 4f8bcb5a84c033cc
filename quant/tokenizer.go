package quant

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/edgectl/edgectl/format/h1b"
	"github.com/edgectl/edgectl/format/tokjson"
	"github.com/edgectl/edgectl/internal/errkind"
)

// llama.cpp token types (llama_token_type).
const (
	tokNormal      = 1
	tokUnknown     = 2
	tokControl     = 3
	tokUserDefined = 4
	tokUnused      = 5
	tokByte        = 6
)

// tokenizerInfo is what both GGUF metadata and .htok are built from.
type tokenizerInfo struct {
	file     *tokjson.File
	tokens   []string // padded to the model's vocab size
	types    []int32
	model    string // tokenizer.ggml.model: gpt2 or llama
	pre      string
	bos, eos int // -1 when unknown
	unk, pad int // -1 when unknown
	addBOS   *bool
	addEOS   *bool
	template string
}

var byteTokenRe = regexp.MustCompile(`^<0x[0-9A-Fa-f]{2}>$`)

// loadTokenizer reads tokenizer.json (+ tokenizer_config.json) from dir.
// It returns nil, nil when there is no tokenizer.json.
func (p *packer) loadTokenizer(vocab int) (*tokenizerInfo, error) {
	dir := p.src.dir
	path := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return nil, nil
	}
	f, err := tokjson.Load(path)
	if err != nil {
		return nil, err
	}
	if f.Model.Type != "BPE" {
		return nil, errkind.Errorf(errkind.Input, "%s: %s tokenizers cannot be written as GGUF/.htok metadata by edgectl (BPE only)", path, f.Model.Type)
	}
	cfg, err := tokjson.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	t := &tokenizerInfo{file: f, tokens: f.Tokens(), bos: -1, eos: -1, unk: -1, pad: -1, addBOS: cfg.AddBOS, addEOS: cfg.AddEOS, template: cfg.ChatTemplate}
	if len(t.tokens) > vocab {
		return nil, errkind.Errorf(errkind.Input, "%s has %d tokens but config.json vocab_size is %d", path, len(t.tokens), vocab)
	}
	special := map[int]bool{}
	for _, a := range f.AddedTokens {
		special[a.ID] = a.Special
	}
	t.types = make([]int32, vocab)
	byteFallback := f.Model.ByteFallback
	for id := 0; id < vocab; id++ {
		switch {
		case id >= len(t.tokens) || t.tokens[id] == "":
			// Padding rows of the embedding, named as llama.cpp's convert does.
			if id >= len(t.tokens) {
				t.tokens = append(t.tokens, "")
			}
			t.tokens[id] = fmt.Sprintf("[PAD%d]", id)
			t.types[id] = tokUnused
		case f.Model.UnkToken != nil && t.tokens[id] == *f.Model.UnkToken:
			t.types[id] = tokUnknown
		case special[id]:
			t.types[id] = tokControl
		default:
			if _, added := special[id]; added {
				t.types[id] = tokUserDefined
			} else if byteFallback && byteTokenRe.MatchString(t.tokens[id]) {
				t.types[id] = tokByte
			} else {
				t.types[id] = tokNormal
			}
		}
	}
	switch {
	case f.IsByteLevel():
		t.model = "gpt2"
	case byteFallback:
		t.model = "llama"
	default:
		return nil, errkind.Errorf(errkind.Input, "%s: a BPE tokenizer that is neither byte-level nor byte-fallback has no GGUF tokenizer model", path)
	}
	t.pre = p.opts.TokenizerPre
	if t.pre == "" {
		t.pre = guessPre(t)
	}
	if cfg.BOSToken != "" {
		if id, ok := f.ID(cfg.BOSToken); ok {
			t.bos = id
		}
	}
	if cfg.EOSToken != "" {
		if id, ok := f.ID(cfg.EOSToken); ok {
			t.eos = id
		}
	}
	if f.Model.UnkToken != nil {
		if id, ok := f.ID(*f.Model.UnkToken); ok {
			t.unk = id
		}
	}
	if cfg.PadToken != "" {
		if id, ok := f.ID(cfg.PadToken); ok {
			t.pad = id
		}
	}
	if c := p.src.rawCfg; c != nil {
		if t.bos < 0 && len(c.BosTokenID) > 0 {
			t.bos = c.BosTokenID[0]
		}
		if t.eos < 0 && len(c.EosTokenID) > 0 {
			t.eos = c.EosTokenID[0]
		}
	}
	return t, nil
}

// guessPre picks tokenizer.ggml.pre. llama.cpp's converter identifies the
// pre-tokenizer by hashing sample tokenizations; without Python we only
// recognize the Llama 3 vocabulary (which BitNet 2B-4T uses) and otherwise
// write "default". --tokenizer-pre overrides.
func guessPre(t *tokenizerInfo) string {
	if t.model != "gpt2" {
		return "default"
	}
	if _, ok := t.file.ID("<|begin_of_text|>"); ok && len(t.tokens) >= 128000 {
		return "llama-bpe"
	}
	return "default"
}

// ggufKVs are the tokenizer.ggml.* pairs.
func (t *tokenizerInfo) ggufKVs() [][2]any {
	kv := [][2]any{
		{"tokenizer.ggml.model", t.model},
		{"tokenizer.ggml.pre", t.pre},
		{"tokenizer.ggml.tokens", t.tokens},
		{"tokenizer.ggml.token_type", t.types},
	}
	if t.model == "llama" {
		// SentencePiece-style vocabularies merge by score; tokenizer.json
		// has ranks only, so score = −id keeps earlier tokens preferred.
		scores := make([]float32, len(t.tokens))
		for i := range scores {
			scores[i] = -float32(i)
		}
		kv = append(kv, [2]any{"tokenizer.ggml.scores", scores})
	}
	// llama.cpp refuses a gpt2 vocabulary without this key ("cannot find
	// tokenizer merges in model file"), even a byte-level one that merges
	// nothing, so gpt2 always gets it, empty or not.
	if len(t.file.Model.Merges) > 0 || t.model == "gpt2" {
		m := make([]string, len(t.file.Model.Merges))
		for i, pr := range t.file.Model.Merges {
			m[i] = pr[0] + " " + pr[1]
		}
		kv = append(kv, [2]any{"tokenizer.ggml.merges", m})
	}
	if t.bos >= 0 {
		kv = append(kv, [2]any{"tokenizer.ggml.bos_token_id", uint32(t.bos)})
	}
	if t.eos >= 0 {
		kv = append(kv, [2]any{"tokenizer.ggml.eos_token_id", uint32(t.eos)})
	}
	if t.unk >= 0 {
		kv = append(kv, [2]any{"tokenizer.ggml.unknown_token_id", uint32(t.unk)})
	}
	if t.pad >= 0 {
		kv = append(kv, [2]any{"tokenizer.ggml.padding_token_id", uint32(t.pad)})
	}
	if t.addBOS != nil {
		kv = append(kv, [2]any{"tokenizer.ggml.add_bos_token", *t.addBOS})
	}
	if t.addEOS != nil {
		kv = append(kv, [2]any{"tokenizer.ggml.add_eos_token", *t.addEOS})
	}
	if t.template != "" {
		kv = append(kv, [2]any{"tokenizer.chat_template", t.template})
	}
	return kv
}

// htok builds the .htok sidecar: token strings by id and merges as ids.
func (t *tokenizerInfo) htok() (*h1b.Tokenizer, error) {
	if t.model != "gpt2" {
		return nil, errkind.Errorf(errkind.Input, "%s: .htok holds GPT-2 byte-level BPE vocabularies only", t.file.Path)
	}
	ids := make(map[string]uint32, len(t.tokens))
	for i, s := range t.tokens {
		if _, dup := ids[s]; !dup {
			ids[s] = uint32(i)
		}
	}
	out := &h1b.Tokenizer{Tokens: t.tokens, Merges: make([][3]uint32, len(t.file.Model.Merges))}
	for i, m := range t.file.Model.Merges {
		a, okA := ids[m[0]]
		b, okB := ids[m[1]]
		c, okC := ids[m[0]+m[1]]
		if !okA || !okB || !okC {
			return nil, errkind.Errorf(errkind.Input, "%s: merge %d (%q %q) names a token missing from the vocabulary", t.file.Path, i, m[0], m[1])
		}
		out.Merges[i] = [3]uint32{a, b, c}
	}
	if t.bos >= 0 {
		out.BOS = uint32(t.bos)
	}
	if t.eos >= 0 {
		out.EOS = uint32(t.eos)
	}
	return out, nil
}
