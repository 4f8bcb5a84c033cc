package tokenizer

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/edgectl/edgectl/format/tokjson"
)

// WordPiece (BERT-family) tokenization as Hugging Face's tokenizers library
// does it: added tokens are split out of the raw text first (those marked
// normalized are matched again after normalization), then the normalizer,
// the pre-tokenizer, and the WordPiece model — greedy longest match first,
// continuation pieces spelled with "##", and a word with no decomposition
// or longer than max_input_chars_per_word becoming a single unk — and last
// the post-processor's template ([CLS] A [SEP] (B [SEP])).

// maxWordChars bounds max_input_chars_per_word (the library's default and
// every published file say 100): a word costs up to its length times the
// longest token in prefix searches, so a hostile value must not make
// every word eligible for a long search.
const maxWordChars = 1000

type wordPiece struct {
	norm     []normalizeStep
	pre      []preTokenizeStep
	whole    map[string]int // the vocabulary: most words are one entry
	first    sortedVocab    // every vocab entry: a word's first piece
	cont     sortedVocab    // entries with the continuing prefix, prefix cut off
	unk      int
	unkName  string
	maxChars int

	rawAdded, normAdded []addedToken // matched before / after normalization
	decodeAs            map[int]string
	template            *tokjson.Template
	decoder             bool // a WordPiece decoder (else tokens are joined by spaces)
	decPrefix           string
	cleanup             bool
}

// sortedVocab finds the longest entry that starts a string by narrowing a
// sorted key range one byte at a time: O(matched length · log V), and no
// memory beyond the key list.
type sortedVocab struct {
	keys []string
	ids  []int
}

func newSortedVocab(m map[string]int) sortedVocab {
	v := sortedVocab{keys: make([]string, 0, len(m))}
	for k := range m {
		v.keys = append(v.keys, k)
	}
	sort.Strings(v.keys)
	v.ids = make([]int, len(v.keys))
	for i, k := range v.keys {
		v.ids[i] = m[k]
	}
	return v
}

// longest returns the byte length and id of the longest entry that is a
// prefix of s ending on a character boundary; n is 0 when none is.
func (v *sortedVocab) longest(s string) (n, id int) {
	lo, hi := 0, len(v.keys)
	for i := 0; i < len(s) && lo < hi; i++ {
		c := s[i]
		// Keys in [lo, hi) all start with s[:i]; the one equal to s[:i]
		// sorts first, then the rest by their byte i.
		lo += sort.Search(hi-lo, func(j int) bool { k := v.keys[lo+j]; return len(k) > i && k[i] >= c })
		hi = lo + sort.Search(hi-lo, func(j int) bool { k := v.keys[lo+j]; return len(k) > i && k[i] > c })
		if lo < hi && len(v.keys[lo]) == i+1 && (i+1 == len(s) || utf8.RuneStart(s[i+1])) {
			n, id = i+1, v.ids[lo]
		}
	}
	return n, id
}

// newWordPiece builds the tokenizer for a tokenizer.json whose model is
// WordPiece.
func newWordPiece(f *tokjson.File, cfg *tokjson.Config) (*Tokenizer, error) {
	nsteps, err := f.NormalizerSteps()
	if err != nil {
		return nil, err
	}
	psteps, err := f.PreTokenizerSteps()
	if err != nil {
		return nil, err
	}
	w := &wordPiece{}
	if w.template, err = f.Template(); err != nil {
		return nil, err
	}
	w.decPrefix, w.cleanup, w.decoder = f.WordPieceDecoder()
	return newWordPieceFrom(f, cfg, nsteps, psteps, w)
}

// newWordPieceFrom completes w (its template and decoder already set) from
// the model block and added tokens of f, with the given normalizer and
// pre-tokenizer steps.
func newWordPieceFrom(f *tokjson.File, cfg *tokjson.Config, nsteps, psteps []tokjson.Step, w *wordPiece) (*Tokenizer, error) {
	if err := checkIDs(f); err != nil {
		return nil, err
	}
	var err error
	if w.norm, err = normalizeSteps(nsteps); err != nil {
		return nil, err
	}
	if w.pre, err = preTokenizeSteps(psteps); err != nil {
		return nil, err
	}
	unkName, prefix := "[UNK]", "##"
	if f.Model.UnkToken != nil {
		unkName = *f.Model.UnkToken
	}
	if p := f.Model.ContinuingSubwordPrefix; p != nil {
		prefix = *p
	}
	w.maxChars = 100
	if m := f.Model.MaxInputCharsPerWord; m != nil {
		if *m < 0 || *m > maxWordChars {
			return nil, fmt.Errorf("model.max_input_chars_per_word is %d, outside 0..%d (the library's default is 100; restore the original tokenizer.json)", *m, maxWordChars)
		}
		w.maxChars = *m
	}
	unk, ok := f.Model.Vocab[unkName]
	if !ok {
		return nil, fmt.Errorf("model.unk_token %q is not in model.vocab: WordPiece needs it for words it cannot split (restore the original tokenizer.json)", unkName)
	}
	w.unk, w.whole = unk, f.Model.Vocab
	w.first = newSortedVocab(f.Model.Vocab)
	cont := map[string]int{}
	for k, id := range f.Model.Vocab {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			cont[rest] = id
		}
	}
	w.cont = newSortedVocab(cont)

	t := &Tokenizer{wp: w, vocab: f.Model.Vocab, unk: unk, bos: -1, template: cfg.ChatTemplate,
		maxLen: cfg.ModelMaxLength, source: "tokenizer.json", cache: map[string][]int{}}
	toks := f.Tokens()
	t.pieces = make([][]byte, len(toks))
	t.special = make([]bool, len(toks))
	for id, s := range toks {
		if s != "" {
			t.pieces[id] = []byte(s)
		}
	}
	w.decodeAs = map[int]string{}
	for _, a := range f.AddedTokens {
		t.special[a.ID] = a.Special
		t.pieces[a.ID] = []byte(a.Content)
		at := addedToken{content: a.Content, id: a.ID, lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord}
		if !a.Normalized {
			w.rawAdded = append(w.rawAdded, at)
			continue
		}
		if n := w.normalize(a.Content); n != a.Content {
			at.content = n
			w.decodeAs[a.ID] = n // the library decodes the normalized form too
		}
		w.normAdded = append(w.normAdded, at)
	}
	for _, l := range [][]addedToken{w.rawAdded, w.normAdded} {
		sort.SliceStable(l, func(i, j int) bool { return len(l[i].content) > len(l[j].content) })
	}
	// The template's leading special token ([CLS]) is what engines call
	// BOS: they pool over it or skip it.
	if w.template != nil && len(w.template.Single) > 0 && len(w.template.Single[0].IDs) == 1 {
		t.bos, t.addBOS, t.bosToken = w.template.Single[0].IDs[0], true, w.template.Single[0].Special
	}
	if id, ok := f.ID(cfg.EOSToken); ok && cfg.EOSToken != "" {
		t.eos, t.eosToken = []int{id}, cfg.EOSToken
	}
	return t, nil
}

func (w *wordPiece) normalize(s string) string {
	for _, n := range w.norm {
		s = n(s)
	}
	return s
}

// word appends the pieces of one pre-tokenized word.
func (w *wordPiece) word(ids []int, s string) []int {
	if utf8.RuneCountInString(s) > w.maxChars {
		return append(ids, w.unk)
	}
	if id, ok := w.whole[s]; ok { // the longest match is the whole word
		return append(ids, id)
	}
	n0 := len(ids)
	for start := 0; start < len(s); {
		v := &w.first
		if start > 0 {
			v = &w.cont
		}
		n, id := v.longest(s[start:])
		if n == 0 {
			return append(ids[:n0], w.unk)
		}
		ids = append(ids, id)
		start += n
	}
	return ids
}

// text appends the ids of a text without the template's special tokens.
func (w *wordPiece) text(ctx context.Context, ids []int, s string) ([]int, error) {
	var words []string
	var err error
	splitAdded(s, w.rawAdded, func(id int) { ids = append(ids, id) }, func(seg string) {
		if err != nil || seg == "" {
			return
		}
		if err = ctx.Err(); err != nil {
			return
		}
		splitAdded(w.normalize(seg), w.normAdded, func(id int) { ids = append(ids, id) }, func(seg string) {
			words = append(words[:0], seg)
			for _, p := range w.pre {
				next := make([]string, 0, len(words))
				for _, x := range words {
					next = p(next, x)
				}
				words = next
			}
			for i, x := range words {
				if i%ctxCheckEvery == ctxCheckEvery-1 && err == nil {
					err = ctx.Err()
				}
				if err != nil {
					return
				}
				ids = w.word(ids, x)
			}
		})
	})
	return ids, err
}

// splitAdded cuts the added tokens out of s, leftmost-longest first, as
// the library does: a single_word token only where no word character
// touches it, lstrip/rstrip take the whitespace beside it. seg gets the
// text between tokens (possibly empty), tok each token's id, in order.
func splitAdded(s string, list []addedToken, tok func(int), seg func(string)) {
	if len(list) == 0 {
		seg(s)
		return
	}
	find := newAddedFinder(s, list)
	start := 0 // the text not yet handed on
	for pos := 0; pos < len(s); {
		at, a := find.next(pos)
		if a == nil {
			break
		}
		end := at + len(a.content)
		if a.singleWord && (endsWithWordChar(s[:at]) || startsWithWordChar(s[end:])) {
			pos = end // the library's matcher moves past a refused match
			continue
		}
		from := at
		if a.lstrip {
			from = max(start, len(strings.TrimRightFunc(s[:at], unicode.IsSpace)))
		}
		if a.rstrip {
			end = len(s) - len(strings.TrimLeftFunc(s[end:], unicode.IsSpace))
		}
		seg(s[start:from])
		tok(a.id)
		start, pos = end, end
	}
	seg(s[start:])
}

// isWordChar is regex \w in Unicode mode (the library's single_word
// test): alphabetic, marks, decimal digits, connector punctuation, joiners.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) || unicode.Is(unicode.Join_Control, r)
}

func endsWithWordChar(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}

// encodeWordPiece lays out a (and b, for a pair) by the post-processor's
// template, returning the token type ids beside the ids.
func (t *Tokenizer) encodeWordPiece(ctx context.Context, a string, b *string, addSpecial bool) (ids, types []int, err error) {
	w := t.wp
	seq := map[string]string{"A": a}
	layout := []tokjson.TemplatePiece{{Sequence: "A"}}
	if b != nil {
		seq["B"] = *b
		layout = append(layout, tokjson.TemplatePiece{Sequence: "B", TypeID: 1})
	}
	if w.template != nil {
		layout = w.template.Single
		if b != nil {
			layout = w.template.Pair
		}
	}
	for _, p := range layout {
		n := len(ids)
		if p.Sequence != "" {
			if ids, err = w.text(ctx, ids, seq[p.Sequence]); err != nil {
				return nil, nil, err
			}
		} else if addSpecial {
			ids = append(ids, p.IDs...)
		}
		for range len(ids) - n {
			types = append(types, p.TypeID)
		}
	}
	return ids, types, nil
}

// EncodeTyped tokenizes a text, or a pair of texts (pair non-nil), laid
// out by the post-processor's template when addSpecial (BERT: [CLS] a
// [SEP] b [SEP]), and returns each token's type id (BERT: 0 for a and its
// [SEP], 1 for b and its [SEP]) — the token_type_ids an encoder takes.
// Pairs need a WordPiece tokenizer; other tokenizers give type 0 to all.
func (t *Tokenizer) EncodeTyped(ctx context.Context, text string, pair *string, addSpecial bool) (ids, typeIDs []int, err error) {
	if t.wp != nil {
		return t.encodeWordPiece(ctx, text, pair, addSpecial)
	}
	if pair != nil {
		return nil, nil, fmt.Errorf("%s: text pairs are supported for WordPiece (BERT-family) tokenizers only", t.source)
	}
	if ids, err = t.EncodeContext(ctx, text, addSpecial); err != nil {
		return nil, nil, err
	}
	return ids, make([]int, len(ids)), nil
}

// decodeWordPiece joins pieces as the WordPiece decoder does: a piece with
// the prefix glues to the one before, others get a space; cleanup removes
// the spaces tokenization put before punctuation and contractions.
func (t *Tokenizer) decodeWordPiece(ids []int) string {
	w := t.wp
	var b strings.Builder
	n := 0
	for _, id := range ids {
		if id < 0 || id >= len(t.pieces) || t.pieces[id] == nil || t.special[id] {
			continue
		}
		tok, ok := w.decodeAs[id]
		if !ok {
			tok = string(t.pieces[id])
		}
		if n > 0 {
			if rest, ok := strings.CutPrefix(tok, w.decPrefix); ok && w.decoder {
				tok = rest
			} else {
				tok = " " + tok // without a WordPiece decoder, tokens are joined by spaces
			}
		}
		if w.decoder && w.cleanup {
			tok = wordPieceCleanup.Replace(tok)
		}
		b.WriteString(tok)
		n++
	}
	return b.String()
}

// wordPieceCleanup is the decoder's cleanup, applied to each piece (with
// its leading space) in this order.
var wordPieceCleanup = cleanupReplacer{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
	{" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

// cleanupReplacer applies its replacements one after another (each over
// the previous one's output), unlike strings.Replacer's single pass.
type cleanupReplacer [][2]string

func (c cleanupReplacer) Replace(s string) string {
	for _, r := range c {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

// ModelMaxLength is tokenizer_config.json's model_max_length: the longest
// input, in tokens, the model takes (0: not stated). Truncating is the
// caller's business.
func (t *Tokenizer) ModelMaxLength() int { return t.maxLen }
