package tokenizer

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/format/gguf"
)

// GGUFVocab is the tokenizer.ggml.* metadata of a GGUF file.
type GGUFVocab struct {
	Model  string    // tokenizer.ggml.model: gpt2 (byte-level BPE), llama (SentencePiece) or bert (WordPiece)
	Pre    string    // tokenizer.ggml.pre
	Tokens []string  // id = position
	Types  []int32   // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
	Merges []string  // "a b", rank = position
	Scores []float32 // id → score (SentencePiece without merges)
	BOS    int       // -1: none
	EOS    int
	Unk    int
	CLS    int // tokenizer.ggml.cls_token_id (-1: none); BERT's [CLS]
	SEP    int // tokenizer.ggml.seperator_token_id (sic, llama.cpp's key); BERT's [SEP]
	AddBOS *bool
	AddEOS *bool
	// AddSpacePrefix is tokenizer.ggml.add_space_prefix (nil: absent,
	// which llama.cpp reads as true for llama vocabularies).
	AddSpacePrefix *bool
}

// Pre-tokenizer patterns by tokenizer.ggml.pre (llama.cpp's names).
var prePatterns = map[string]string{
	"llama-bpe": llama3Pattern,
	"llama3":    llama3Pattern,
	"qwen2":     `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

// FromGGUF builds a tokenizer from GGUF metadata, for a .gguf that has no
// tokenizer.json beside it: BPE with merges (gpt2, and llama as `quant
// pack` writes it) and SentencePiece in llama.cpp's score form (llama
// without merges, as llama.cpp's converter writes Llama 2).
func FromGGUF(v GGUFVocab) (*Tokenizer, error) {
	if v.Model == "bert" {
		return fromGGUFWordPiece(v)
	}
	if v.Model != "gpt2" && v.Model != "llama" {
		return nil, fmt.Errorf("tokenizer.ggml.model %q is not supported (the engine reads gpt2, llama and bert); put the model's tokenizer.json beside it", v.Model)
	}
	if len(v.Tokens) == 0 || len(v.Tokens) > maxVocab {
		return nil, fmt.Errorf("tokenizer.ggml.tokens holds %d tokens, outside 1..%d; the file is corrupt or hostile (put the model's tokenizer.json beside it)", len(v.Tokens), maxVocab)
	}
	if len(v.Merges) == 0 {
		if v.Model == "llama" {
			return fromSPM(v)
		}
		return nil, fmt.Errorf("tokenizer.ggml.merges is empty: a gpt2 vocabulary needs its merges; the file is incomplete (put the model's tokenizer.json beside it)")
	}
	t := &Tokenizer{vocab: make(map[string]int, len(v.Tokens)), ranks: make(map[[2]string]int, len(v.Merges)),
		unk: -1, bos: v.BOS, cache: map[string][]int{}, source: "GGUF tokenizer.ggml.*"}
	if v.Model == "gpt2" {
		t.byteLevel = true
		pat, ok := prePatterns[v.Pre]
		if !ok {
			pat = gpt2Pattern
		}
		t.splits = []splitRegex{builtinSplit(pat, "pre-tokenizer regex for tokenizer.ggml.pre "+strconv.Quote(v.Pre))}
	} else {
		t.spmPrepend, t.spmSpaces, t.byteFallback, t.stripLeading, t.fuseUnk = true, true, true, true, true
	}
	if v.Unk >= 0 && v.Unk < len(v.Tokens) {
		t.unk = v.Unk
	}
	t.pieces = make([][]byte, len(v.Tokens))
	t.special = make([]bool, len(v.Tokens))
	for i := range t.byteToken {
		t.byteToken[i] = -1
	}
	for id, s := range v.Tokens {
		typ := int32(1)
		if id < len(v.Types) {
			typ = v.Types[id]
		}
		switch typ {
		case 3, 4: // control, user-defined: matched whole in the text
			t.special[id] = typ == 3
			t.pieces[id] = []byte(s)
			t.added = append(t.added, addedToken{content: s, id: id})
			continue
		case 6: // byte
			var b byte
			if _, err := fmt.Sscanf(s, "<0x%02X>", &b); err == nil {
				t.byteToken[b] = id
				t.pieces[id] = []byte{b}
				t.vocab[s] = id
				continue
			}
		}
		if _, dup := t.vocab[s]; !dup {
			t.vocab[s] = id
		}
		t.pieces[id] = t.tokenBytes(s)
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	for i, m := range v.Merges {
		a, b, ok := strings.Cut(m, " ")
		if !ok {
			return nil, fmt.Errorf("tokenizer.ggml.merges[%d] = %q is not a pair", i, m)
		}
		if _, dup := t.ranks[[2]string{a, b}]; !dup {
			t.ranks[[2]string{a, b}] = i
		}
	}
	if v.BOS >= 0 && v.BOS < len(v.Tokens) {
		t.bosToken = v.Tokens[v.BOS]
		t.addBOS = v.Model == "llama"
		if v.AddBOS != nil {
			t.addBOS = *v.AddBOS
		}
	}
	if v.EOS >= 0 && v.EOS < len(v.Tokens) {
		t.eos, t.eosToken = []int{v.EOS}, v.Tokens[v.EOS]
	}
	return t, nil
}

// ReadGGUFVocab reads the tokenizer.ggml.* metadata of g; ok is false when
// the file has no token list (a model can still be inspected without
// one). Absent optional keys stay at their zero value, and absent ids at
// -1.
func ReadGGUFVocab(g *gguf.File) (v GGUFVocab, ok bool, err error) {
	toks, err := g.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return v, false, nil
	}
	v = GGUFVocab{Tokens: toks, BOS: -1, EOS: -1, Unk: -1, CLS: -1, SEP: -1}
	v.Model, _ = g.String("tokenizer.ggml.model")
	v.Pre, _ = g.String("tokenizer.ggml.pre")
	v.Types, _ = g.Int32s("tokenizer.ggml.token_type")
	v.Merges, _ = g.Strings("tokenizer.ggml.merges")
	if _, has := g.KV("tokenizer.ggml.scores"); has {
		if v.Scores, err = g.Float32s("tokenizer.ggml.scores"); err != nil {
			// llama.cpp also takes integer scores.
			is, ierr := g.Int32s("tokenizer.ggml.scores")
			if ierr != nil {
				return v, false, fmt.Errorf("%w (tokenizer.ggml.scores must be f32 or i32; convert the model again)", err)
			}
			v.Scores = make([]float32, len(is))
			for i, s := range is {
				v.Scores[i] = float32(s)
			}
		}
	}
	for key, dst := range map[string]*int{"tokenizer.ggml.bos_token_id": &v.BOS, "tokenizer.ggml.eos_token_id": &v.EOS, "tokenizer.ggml.unknown_token_id": &v.Unk,
		"tokenizer.ggml.cls_token_id": &v.CLS, "tokenizer.ggml.seperator_token_id": &v.SEP} {
		if id, err := g.Int(key); err == nil {
			*dst = int(id)
		}
	}
	for key, dst := range map[string]**bool{"tokenizer.ggml.add_bos_token": &v.AddBOS, "tokenizer.ggml.add_eos_token": &v.AddEOS, "tokenizer.ggml.add_space_prefix": &v.AddSpacePrefix} {
		if b, err := g.Bool(key); err == nil {
			*dst = &b
		}
	}
	return v, true, nil
}
