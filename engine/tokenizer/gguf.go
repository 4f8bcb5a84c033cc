package tokenizer

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// GGUFVocab is the tokenizer.ggml.* metadata of a GGUF file.
type GGUFVocab struct {
	Model  string   // tokenizer.ggml.model: gpt2 (byte-level BPE) or llama (SentencePiece-style BPE)
	Pre    string   // tokenizer.ggml.pre
	Tokens []string // id = position
	Types  []int32  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
	Merges []string // "a b", rank = position
	BOS    int      // -1: none
	EOS    int
	Unk    int
	AddBOS *bool
}

// Pre-tokenizer patterns by tokenizer.ggml.pre (llama.cpp's names).
var prePatterns = map[string]string{
	"llama-bpe": llama3Pattern,
	"llama3":    llama3Pattern,
	"qwen2":     `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

// FromGGUF builds a tokenizer from GGUF metadata, for a .gguf that has no
// tokenizer.json beside it. It supports the BPE models `quant pack` and
// llama.cpp's converter write with merges: gpt2 and llama.
func FromGGUF(v GGUFVocab) (*Tokenizer, error) {
	if v.Model != "gpt2" && v.Model != "llama" {
		return nil, fmt.Errorf("tokenizer.ggml.model %q is not supported (gpt2 or llama with merges)", v.Model)
	}
	if len(v.Merges) == 0 {
		return nil, fmt.Errorf("tokenizer.ggml.merges is empty: a %s vocabulary without merges (score-based SentencePiece) is not supported; put tokenizer.json beside the model", v.Model)
	}
	if len(v.Tokens) == 0 || len(v.Tokens) > maxVocab {
		return nil, fmt.Errorf("tokenizer.ggml.tokens holds %d tokens, outside 1..%d; the file is corrupt or hostile (put the model's tokenizer.json beside it)", len(v.Tokens), maxVocab)
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
