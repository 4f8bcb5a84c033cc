// Package tokenizer turns text into token ids and back for the engine: BPE
// over a Hugging Face tokenizer.json (read by format/tokjson) in its two
// common flavours — GPT-2 style byte-level BPE with regex pre-tokenization
// (GPT-2, Llama 3, Qwen) and SentencePiece-style BPE with "▁" for spaces and
// <0xXX> byte fallback (Llama 2, TinyStories) — plus added/special tokens;
// SentencePiece in llama.cpp's score form from GGUF metadata (spm.go); and
// WordPiece for BERT-family encoders, from tokenizer.json or a GGUF "bert"
// vocabulary (wordpiece.go, bert.go).
package tokenizer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/edgectl/edgectl/format/tokjson"
)

// Tokenizer encodes and decodes; safe for concurrent use.
type Tokenizer struct {
	vocab     map[string]int
	ranks     map[[2]string]int
	pieces    [][]byte // id → the bytes it decodes to
	special   []bool   // id → special (skipped by Decode)
	added     []addedToken
	byteLevel bool
	// SentencePiece-style normalization: prepend ▁ and map spaces to ▁.
	spmPrepend, spmSpaces bool
	metaspace             bool // Metaspace pre-tokenizer: prepend ▁ when missing
	nfc                   bool
	prefixSpace           bool // ByteLevel add_prefix_space
	splits                []splitRegex
	source                string // where the tokenizer came from, for errors
	byteFallback          bool
	ignoreMerges          bool
	unk                   int
	fuseUnk               bool
	stripLeading          bool       // decoder Strip(start 1) of a leading space
	spm                   *spm       // set: SentencePiece in llama.cpp's score form (spm.go) encodes and decodes
	wp                    *wordPiece // set: WordPiece (wordpiece.go) encodes and decodes
	maxLen                int        // tokenizer_config.json model_max_length (0: not stated)

	bos       int
	addBOS    bool
	eos       []int
	bosToken  string
	eosToken  string
	template  string
	cacheMu   sync.Mutex
	cache     map[string][]int
	byteToken [256]int // byte-fallback ids (<0xXX>), -1 if absent
}

type addedToken struct {
	content        string
	id             int
	lstrip, rstrip bool
	singleWord     bool // matched only where no word character touches it (WordPiece path)
}

// Load reads DIR/tokenizer.json and DIR/tokenizer_config.json (or chat_template.jinja).
func Load(dir string) (*Tokenizer, error) {
	f, err := tokjson.Load(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := tokjson.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "tokenizer.json")
	t, err := New(f, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.source = path
	return t, nil
}

// GPT-2's pre-tokenizer pattern, used by ByteLevel with use_regex.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// New builds a tokenizer from a parsed tokenizer.json and tokenizer_config.json (cfg may be nil).
func New(f *tokjson.File, cfg *tokjson.Config) (*Tokenizer, error) {
	if cfg == nil {
		cfg = &tokjson.Config{}
	}
	if f.Model.Type == "WordPiece" {
		return newWordPiece(f, cfg)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer model %q is not supported (the engine implements BPE and WordPiece)", f.Model.Type)
	}
	if err := checkIDs(f); err != nil {
		return nil, err
	}
	t := &Tokenizer{vocab: f.Model.Vocab, ranks: make(map[[2]string]int, len(f.Model.Merges)),
		byteFallback: f.Model.ByteFallback, ignoreMerges: f.Model.IgnoreMerges, fuseUnk: f.Model.FuseUnk,
		unk: -1, bos: -1, cache: map[string][]int{}, template: cfg.ChatTemplate, source: "tokenizer.json", maxLen: cfg.ModelMaxLength}
	for i, m := range f.Model.Merges {
		if _, dup := t.ranks[m]; !dup {
			t.ranks[m] = i
		}
	}
	if f.Model.UnkToken != nil {
		if id, ok := f.Model.Vocab[*f.Model.UnkToken]; ok {
			t.unk = id
		}
	}
	t.byteLevel = f.IsByteLevel()
	if err := t.parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if err := t.parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	t.stripLeading = strings.Contains(string(f.Decoder), `"Strip"`)
	if strings.Contains(string(f.Decoder), `"Metaspace"`) {
		t.stripLeading = true
	}
	// id → bytes
	toks := f.Tokens()
	t.pieces = make([][]byte, len(toks))
	t.special = make([]bool, len(toks))
	for i := range t.byteToken {
		t.byteToken[i] = -1
	}
	isAdded := map[int]bool{}
	for _, a := range f.AddedTokens {
		isAdded[a.ID] = true
		t.special[a.ID] = a.Special
		t.pieces[a.ID] = []byte(a.Content)
		t.added = append(t.added, addedToken{content: a.Content, id: a.ID, lstrip: a.LStrip, rstrip: a.RStrip})
	}
	// Longest first, so "<|im_start|>" wins over a shorter prefix.
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	for id, s := range toks {
		if isAdded[id] {
			continue
		}
		t.pieces[id] = t.tokenBytes(s)
		if len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>' {
			var b byte
			if _, err := fmt.Sscanf(s, "<0x%02X>", &b); err == nil {
				t.byteToken[b] = id
				if t.byteFallback {
					t.pieces[id] = []byte{b}
				}
			}
		}
	}
	// BOS/EOS from tokenizer_config.json; BOS is added when add_bos_token
	// says so or the post-processor template starts with a special token.
	if id, ok := f.ID(cfg.BOSToken); ok && cfg.BOSToken != "" {
		t.bos, t.bosToken = id, cfg.BOSToken
	}
	if id, ok := f.ID(cfg.EOSToken); ok && cfg.EOSToken != "" {
		t.eos, t.eosToken = []int{id}, cfg.EOSToken
	}
	if cfg.AddBOS != nil {
		t.addBOS = *cfg.AddBOS && t.bos >= 0
	} else if id := templateBOS(f.PostProcessor, f); id >= 0 {
		t.bos, t.addBOS = id, true
	}
	return t, nil
}

// templateBOS finds a special token that a TemplateProcessing post-processor
// puts before the sequence.
func templateBOS(raw json.RawMessage, f *tokjson.File) int {
	var pp struct {
		Type   string `json:"type"`
		Single []struct {
			SpecialToken *struct{ ID string } `json:"SpecialToken"`
			Sequence     *struct{ ID string } `json:"Sequence"`
		} `json:"single"`
	}
	if json.Unmarshal(raw, &pp) != nil || pp.Type != "TemplateProcessing" || len(pp.Single) == 0 || pp.Single[0].SpecialToken == nil {
		return -1
	}
	if id, ok := f.ID(pp.Single[0].SpecialToken.ID); ok {
		return id
	}
	return -1
}

type component struct {
	Type           string          `json:"type"`
	Normalizers    []component     `json:"normalizers"`
	Pretokenizers  []component     `json:"pretokenizers"`
	Prepend        string          `json:"prepend"`
	Pattern        json.RawMessage `json:"pattern"`
	Content        string          `json:"content"`
	AddPrefixSpace *bool           `json:"add_prefix_space"`
	UseRegex       *bool           `json:"use_regex"`
	Behavior       string          `json:"behavior"`
	Invert         bool            `json:"invert"`
	Replacement    string          `json:"replacement"`
	PrependScheme  string          `json:"prepend_scheme"`
	Split          *bool           `json:"split"`
}

func (t *Tokenizer) parseNormalizer(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("normalizer: %v", err)
	}
	var walk func(c component) error
	walk = func(c component) error {
		switch c.Type {
		case "Sequence":
			for _, n := range c.Normalizers {
				if err := walk(n); err != nil {
					return err
				}
			}
		case "Prepend":
			if c.Prepend != "▁" {
				return fmt.Errorf("normalizer Prepend %q is not supported (only ▁)", c.Prepend)
			}
			t.spmPrepend = true
		case "Replace":
			var p struct{ String string }
			json.Unmarshal(c.Pattern, &p)
			if p.String != " " || c.Content != "▁" {
				return fmt.Errorf("normalizer Replace %s → %q is not supported (only \" \" → ▁)", c.Pattern, c.Content)
			}
			t.spmSpaces = true
		case "NFC":
			t.nfc = true
		default:
			return fmt.Errorf("normalizer %q is not supported", c.Type)
		}
		return nil
	}
	return walk(c)
}

func (t *Tokenizer) parsePreTokenizer(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("pre_tokenizer: %v", err)
	}
	var walk func(c component) error
	walk = func(c component) error {
		switch c.Type {
		case "Sequence":
			for _, n := range c.Pretokenizers {
				if err := walk(n); err != nil {
					return err
				}
			}
		case "ByteLevel":
			t.byteLevel = true
			if c.AddPrefixSpace != nil && *c.AddPrefixSpace {
				t.prefixSpace = true
			}
			if c.UseRegex == nil || *c.UseRegex {
				t.splits = append(t.splits, builtinSplit(gpt2Pattern, "pre_tokenizer ByteLevel regex (GPT-2's)"))
			}
		case "Split":
			var p struct{ Regex, String string }
			json.Unmarshal(c.Pattern, &p)
			if p.Regex == "" || c.Invert || (c.Behavior != "Isolated" && c.Behavior != "") {
				return fmt.Errorf("pre_tokenizer Split %s (behavior %s) is not supported (only Isolated regex splits)", c.Pattern, c.Behavior)
			}
			sr, err := compileSplit(p.Regex, "pre_tokenizer Split regex")
			if err != nil {
				return fmt.Errorf("pre_tokenizer Split regex: %v", err)
			}
			t.splits = append(t.splits, sr)
		case "Metaspace":
			t.spmSpaces = true
			t.metaspace = c.PrependScheme != "never"
		default:
			return fmt.Errorf("pre_tokenizer %q is not supported", c.Type)
		}
		return nil
	}
	return walk(c)
}

// tokenBytes is what a vocab entry decodes to.
func (t *Tokenizer) tokenBytes(s string) []byte {
	if t.byteLevel {
		out := make([]byte, 0, len(s))
		for _, r := range s {
			if b, ok := unicodeToByte[r]; ok {
				out = append(out, b)
			} else {
				out = utf8.AppendRune(out, r)
			}
		}
		return out
	}
	return []byte(strings.ReplaceAll(s, "▁", " "))
}

// BOS is the beginning-of-sequence id (-1: none).
func (t *Tokenizer) BOS() int { return t.bos }

// AddsBOS reports whether Encode with addSpecial puts BOS first.
func (t *Tokenizer) AddsBOS() bool { return t.addBOS }

// EOS lists end-of-sequence ids known to the tokenizer config.
func (t *Tokenizer) EOS() []int { return t.eos }

// BOSToken and EOSToken are the special tokens' text, for chat templates.
func (t *Tokenizer) BOSToken() string { return t.bosToken }
func (t *Tokenizer) EOSToken() string { return t.eosToken }

// ChatTemplate is the Jinja source from tokenizer_config.json, if any.
func (t *Tokenizer) ChatTemplate() string { return t.template }

// VocabSize is the number of ids.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// IsSpecial reports whether id is a special added token.
func (t *Tokenizer) IsSpecial(id int) bool { return id >= 0 && id < len(t.special) && t.special[id] }

// Piece is the raw bytes token id decodes to (special tokens included).
func (t *Tokenizer) Piece(id int) []byte {
	if id < 0 || id >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// Decode turns ids into text, skipping special tokens, as HF's
// decode(skip_special_tokens=True) does.
func (t *Tokenizer) Decode(ids []int) string {
	if t.spm != nil {
		return t.decodeSPM(ids)
	}
	if t.wp != nil {
		return t.decodeWordPiece(ids)
	}
	var b []byte
	for _, id := range ids {
		if t.IsSpecial(id) {
			continue
		}
		b = append(b, t.Piece(id)...)
	}
	s := string(b)
	if t.stripLeading {
		s = strings.TrimPrefix(s, " ")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Llama 3's pre-tokenizer pattern, which BitNet b1.58 2B-4T's vocabulary
// (the usual .htok content) was trained with.
const llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// FromHTok builds a byte-level BPE tokenizer from an .htok sidecar: GPT-2
// byte-mapped token strings (id = position) and merges as token-id triples
// (rank = position). The sidecar carries no pre-tokenizer or special-token
// table, so Llama 3's split pattern is used and "<|…|>" tokens are special.
func FromHTok(tokens []string, merges [][3]uint32, bos, eos int) *Tokenizer {
	t := &Tokenizer{vocab: make(map[string]int, len(tokens)), ranks: make(map[[2]string]int, len(merges)),
		byteLevel: true, unk: -1, bos: bos, eos: []int{eos}, cache: map[string][]int{}, source: ".htok tokenizer",
		splits: []splitRegex{builtinSplit(llama3Pattern, "pre-tokenizer regex (Llama 3's)")}}
	t.addBOS = bos >= 0 && bos < len(tokens)
	t.pieces = make([][]byte, len(tokens))
	t.special = make([]bool, len(tokens))
	for i := range t.byteToken {
		t.byteToken[i] = -1
	}
	for id, s := range tokens {
		if strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") {
			t.special[id] = true
			t.pieces[id] = []byte(s)
			t.added = append(t.added, addedToken{content: s, id: id})
			continue
		}
		if _, dup := t.vocab[s]; !dup {
			t.vocab[s] = id
		}
		t.pieces[id] = t.tokenBytes(s)
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	for i, mg := range merges {
		if int(mg[0]) < len(tokens) && int(mg[1]) < len(tokens) {
			p := [2]string{tokens[mg[0]], tokens[mg[1]]}
			if _, dup := t.ranks[p]; !dup {
				t.ranks[p] = i
			}
		}
	}
	if bos >= 0 && bos < len(tokens) {
		t.bosToken = tokens[bos]
	}
	if eos >= 0 && eos < len(tokens) {
		t.eosToken = tokens[eos]
	}
	return t
}
