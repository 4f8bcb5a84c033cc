package tokenizer

import (
	"fmt"
	"strings"

	"github.com/edgectl/edgectl/format/tokjson"
)

// fromGGUFWordPiece builds a WordPiece tokenizer from a GGUF "bert"
// vocabulary. llama.cpp's converter respells BERT's vocab.txt in its
// "phantom space" form — a word-initial piece gains a leading U+2581, a
// "##" continuation loses its prefix, control tokens ([CLS], older
// converters: anything in brackets) stay — so the original spelling is
// recovered by undoing that. The GGUF records no normalizer: the uncased
// defaults apply (llama.cpp lower-cases every bert vocabulary too), and
// the [CLS] … [SEP] template from tokenizer.ggml.cls_token_id and
// seperator_token_id.
func fromGGUFWordPiece(v GGUFVocab) (*Tokenizer, error) {
	if len(v.Tokens) == 0 || len(v.Tokens) > maxVocab {
		return nil, fmt.Errorf("tokenizer.ggml.tokens holds %d tokens, outside 1..%d; the file is corrupt or hostile (put the model's tokenizer.json beside it)", len(v.Tokens), maxVocab)
	}
	f := &tokjson.File{Model: tokjson.Model{Type: "WordPiece", Vocab: make(map[string]int, len(v.Tokens))}}
	for id, s := range v.Tokens {
		typ := int32(1)
		if id < len(v.Types) {
			typ = v.Types[id]
		}
		orig, control := wordPieceSpelling(s, typ)
		if _, dup := f.Model.Vocab[orig]; !dup {
			f.Model.Vocab[orig] = id
		}
		if control {
			f.AddedTokens = append(f.AddedTokens, tokjson.AddedToken{ID: id, Content: orig, Special: true})
		}
	}
	if v.Unk >= 0 && v.Unk < len(v.Tokens) {
		unk, _ := wordPieceSpelling(v.Tokens[v.Unk], 3)
		f.Model.UnkToken = &unk
	}
	cls, sep := v.CLS, v.SEP
	if cls < 0 {
		cls = v.BOS
	}
	if sep < 0 {
		sep = v.EOS
	}
	w := &wordPiece{decoder: true, decPrefix: "##", cleanup: true}
	if cls >= 0 && cls < len(v.Tokens) && sep >= 0 && sep < len(v.Tokens) {
		c, _ := wordPieceSpelling(v.Tokens[cls], 3)
		s, _ := wordPieceSpelling(v.Tokens[sep], 3)
		w.template = &tokjson.Template{
			Single: []tokjson.TemplatePiece{{Special: c, IDs: []int{cls}}, {Sequence: "A"}, {Special: s, IDs: []int{sep}}},
			Pair: []tokjson.TemplatePiece{{Special: c, IDs: []int{cls}}, {Sequence: "A"}, {Special: s, IDs: []int{sep}},
				{Sequence: "B", TypeID: 1}, {Special: s, IDs: []int{sep}, TypeID: 1}},
		}
	}
	t, err := newWordPieceFrom(f, &tokjson.Config{}, bertDefaultSteps, bertDefaultPreSteps, w)
	if err != nil {
		return nil, fmt.Errorf("GGUF tokenizer.ggml.* (bert): %w", err)
	}
	t.source = "GGUF tokenizer.ggml.* (bert)"
	return t, nil
}

// wordPieceSpelling undoes llama.cpp's phantom-space spelling of one GGUF
// token of type typ (3: control); control reports a token to match whole.
func wordPieceSpelling(s string, typ int32) (orig string, control bool) {
	switch {
	case typ == 3:
		return s, true
	case strings.HasPrefix(s, "▁"):
		return s[len("▁"):], false
	case len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']': // older converters kept [unused0] etc. as they were
		return s, false
	}
	return "##" + s, false
}
