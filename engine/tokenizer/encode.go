package tokenizer

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// byteToUnicode is GPT-2's reversible map from bytes to printable runes.
var byteToUnicode, unicodeToByte = func() ([256]rune, map[rune]byte) {
	var fwd [256]rune
	back := map[rune]byte{}
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			fwd[b] = rune(b)
		} else {
			fwd[b] = rune(256 + n)
			n++
		}
		back[fwd[b]] = byte(b)
	}
	return fwd, back
}()

// Encode tokenizes trusted text with a tokenizer known to be sound (tests,
// tools): it returns nil where EncodeContext would fail.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	ids, err := t.EncodeContext(context.Background(), text, addSpecial)
	if err != nil {
		return nil
	}
	return ids
}

// EncodeContext tokenizes text. Added tokens (special or not) in the text
// are recognized, as Hugging Face tokenizers do; addSpecial puts BOS first
// when the tokenizer wants it. It stops when ctx is cancelled (returning
// ctx.Err()) and when a pre-tokenizer regex runs past its match timeout
// (an error matching ErrRegexTimeout). Its work grows linearly with the
// text, times the number of added tokens and of merges a word goes through.
// A score-form SentencePiece vocabulary follows llama.cpp's rules instead
// (encodeSPM, which also adds EOS where the vocabulary asks): n·(log n +
// longest piece) for n characters, plus the added-token search.
func (t *Tokenizer) EncodeContext(ctx context.Context, text string, addSpecial bool) ([]int, error) {
	if t.spm != nil {
		return t.encodeSPM(ctx, text, addSpecial)
	}
	if t.wp != nil {
		ids, _, err := t.encodeWordPiece(ctx, text, nil, addSpecial)
		return ids, err
	}
	var ids []int
	if addSpecial && t.addBOS {
		ids = append(ids, t.bos)
	}
	find := newAddedFinder(text, t.added)
	var err error
	for pos := 0; pos < len(text); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		at, tok := find.next(pos)
		seg := text[pos:at]
		if tok != nil && tok.lstrip {
			seg = strings.TrimRightFunc(seg, unicode.IsSpace)
		}
		if ids, err = t.encodeSegment(ctx, ids, seg); err != nil {
			return nil, err
		}
		if tok == nil {
			break
		}
		ids = append(ids, tok.id)
		pos = at + len(tok.content)
		if tok.rstrip {
			pos = len(text) - len(strings.TrimLeftFunc(text[pos:], unicode.IsSpace))
		}
	}
	return ids, nil
}

// addedFinder finds the earliest (then longest) added token at or after a
// position. It remembers where each token occurs next, so that a text with
// many added tokens is searched once per token, not once per occurrence.
type addedFinder struct {
	text  string
	added []addedToken
	at    []int // next occurrence of added[i] at or after the last search; -1 unknown; len(text)+1 none
}

func newAddedFinder(text string, added []addedToken) *addedFinder {
	at := make([]int, len(added))
	for i := range at {
		at[i] = -1
	}
	return &addedFinder{text: text, added: added, at: at}
}

func (f *addedFinder) next(pos int) (int, *addedToken) {
	none := len(f.text) + 1
	best, bi := -1, -1
	for i := range f.added {
		a := &f.added[i]
		if a.content == "" {
			continue
		}
		if f.at[i] < pos {
			f.at[i] = none
			if j := strings.Index(f.text[pos:], a.content); j >= 0 {
				f.at[i] = pos + j
			}
		}
		// Added tokens are sorted longest first: at equal positions the
		// first found wins.
		if j := f.at[i]; j != none && (best < 0 || j < best) {
			best, bi = j, i
		}
	}
	if bi < 0 {
		return len(f.text), nil
	}
	return best, &f.added[bi]
}

// encodeSegment runs normalizer, pre-tokenizer and BPE over text without
// added tokens.
func (t *Tokenizer) encodeSegment(ctx context.Context, ids []int, s string) ([]int, error) {
	if s == "" {
		return ids, nil
	}
	if t.nfc {
		s = norm.NFC.String(s)
	}
	if t.spmSpaces {
		s = strings.ReplaceAll(s, " ", "▁")
	}
	switch {
	case t.spmPrepend: // normalizer Prepend: unconditional
		s = "▁" + s
	case t.metaspace && !strings.HasPrefix(s, "▁"): // Metaspace: only if missing
		s = "▁" + s
	}
	if t.prefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	words := []string{s}
	var err error
	for _, sr := range t.splits {
		var next []string
		for _, w := range words {
			if next, err = t.splitIsolated(ctx, next, sr, w); err != nil {
				return nil, err
			}
		}
		words = next
	}
	for i, w := range words {
		if i%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if t.byteLevel {
			var b strings.Builder
			for i := 0; i < len(w); i++ {
				b.WriteRune(byteToUnicode[w[i]])
			}
			w = b.String()
		}
		wids, err := t.word(ctx, w)
		if err != nil {
			return nil, err
		}
		ids = append(ids, wids...)
	}
	return ids, nil
}

// maxCachedWord is the longest word the BPE cache keeps: words are short
// where a pre-tokenizer splits the text; without one (SentencePiece-style
// tokenizers) a whole prompt is one word, which must not stay in memory.
const maxCachedWord = 256

// word BPE-encodes one pre-tokenized word, with a cache.
func (t *Tokenizer) word(ctx context.Context, w string) ([]int, error) {
	t.cacheMu.Lock()
	if ids, ok := t.cache[w]; ok {
		t.cacheMu.Unlock()
		return ids, nil
	}
	t.cacheMu.Unlock()
	ids, err := t.bpe(ctx, w)
	if err != nil || len(w) > maxCachedWord {
		return ids, err
	}
	t.cacheMu.Lock()
	if len(t.cache) > 100000 {
		clear(t.cache)
	}
	t.cache[w] = ids
	t.cacheMu.Unlock()
	return ids, nil
}

// bpe merges one word, as GPT-2's reference does: merge every occurrence
// of the lowest-ranked adjacent pair, left to right, until no pair is in
// the merge list. A word goes through as many rounds as distinct merges
// apply to it; the ranks of adjacent pairs are kept between rounds, so a
// round costs a scan of integers plus merge-list lookups next to the
// merges only. A long word (a whole prompt, without a pre-tokenizer) looks
// at ctx every round.
func (t *Tokenizer) bpe(ctx context.Context, w string) ([]int, error) {
	if id, ok := t.vocab[w]; ok && (t.ignoreMerges || utf8.RuneCountInString(w) == 1) {
		return []int{id}, nil
	}
	syms, err := t.merge(ctx, w)
	if err != nil {
		return nil, err
	}
	return t.symbolIDs(syms), nil
}

// merge splits w into runes and applies the merges.
func (t *Tokenizer) merge(ctx context.Context, w string) ([]string, error) {
	syms := make([]string, 0, len(w))
	for _, r := range w {
		syms = append(syms, string(r))
	}
	rank := func(a, b string) int {
		if r, ok := t.ranks[[2]string{a, b}]; ok {
			return r
		}
		return -1
	}
	// pr[i] is the rank of the pair (syms[i], syms[i+1]), -1 if none.
	pr := make([]int, max(len(syms)-1, 0))
	for i := range pr {
		pr[i] = rank(syms[i], syms[i+1])
	}
	var merged []bool // per symbol of the round's output: made by this round
	var src []int     // per symbol of the round's output: its index before
	long := len(syms) >= ctxCheckEvery
	for len(syms) > 1 {
		if long {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		best := -1
		for _, r := range pr {
			if r >= 0 && (best < 0 || r < best) {
				best = r
			}
		}
		if best < 0 {
			break
		}
		// Ranks are unique per pair: pr[i] == best is an occurrence of
		// the pair. Compact in place (the output is never longer).
		merged, src = merged[:0], src[:0]
		n := 0
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && pr[i] == best {
				syms[n] = syms[i] + syms[i+1]
				merged, src = append(merged, true), append(src, i)
				i++
			} else {
				syms[n] = syms[i]
				merged, src = append(merged, false), append(src, i)
			}
			n++
		}
		syms = syms[:n]
		// Two untouched neighbours keep their pair's rank (src only
		// grows, so pr[src[j]] is read before it is overwritten).
		for j := 0; j+1 < n; j++ {
			if !merged[j] && !merged[j+1] {
				pr[j] = pr[src[j]]
			} else {
				pr[j] = rank(syms[j], syms[j+1])
			}
		}
		pr = pr[:max(n-1, 0)]
	}
	return syms, nil
}

// symbolIDs maps merged symbols to ids: the vocabulary, else byte
// fallback, else unk (fused when the model says so).
func (t *Tokenizer) symbolIDs(syms []string) []int {
	ids := make([]int, 0, len(syms))
	lastUnk := false
	for _, s := range syms {
		if id, ok := t.vocab[s]; ok {
			ids = append(ids, id)
			lastUnk = false
			continue
		}
		if t.byteFallback {
			ok := true
			for i := 0; i < len(s); i++ {
				if t.byteToken[s[i]] < 0 {
					ok = false
				}
			}
			if ok {
				for i := 0; i < len(s); i++ {
					ids = append(ids, t.byteToken[s[i]])
				}
				lastUnk = false
				continue
			}
		}
		if t.unk >= 0 && !(t.fuseUnk && lastUnk) {
			ids = append(ids, t.unk)
		}
		lastUnk = true
	}
	return ids
}
