package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
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

// Encode tokenizes text. Added tokens (special or not) in the text are
// recognized, as Hugging Face tokenizers do; addSpecial puts BOS first when
// the tokenizer wants it.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	var ids []int
	if addSpecial && t.addBOS {
		ids = append(ids, t.bos)
	}
	for text != "" {
		at, tok := t.nextAdded(text)
		seg := text[:at]
		if tok != nil {
			if tok.rstrip || tok.lstrip {
				if tok.lstrip {
					seg = strings.TrimRightFunc(seg, unicode.IsSpace)
				}
			}
		}
		ids = t.encodeSegment(ids, seg)
		if tok == nil {
			break
		}
		ids = append(ids, tok.id)
		text = text[at+len(tok.content):]
		if tok.rstrip {
			text = strings.TrimLeftFunc(text, unicode.IsSpace)
		}
	}
	return ids
}

// nextAdded finds the earliest (then longest) added token in s.
func (t *Tokenizer) nextAdded(s string) (int, *addedToken) {
	best, bi := -1, -1
	for i := range t.added {
		a := &t.added[i]
		if a.content == "" {
			continue
		}
		j := strings.Index(s, a.content)
		if j >= 0 && (best < 0 || j < best) {
			best, bi = j, i
		}
	}
	if bi < 0 {
		return len(s), nil
	}
	return best, &t.added[bi]
}

// encodeSegment runs normalizer, pre-tokenizer and BPE over text without
// added tokens.
func (t *Tokenizer) encodeSegment(ids []int, s string) []int {
	if s == "" {
		return ids
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
	for _, re := range t.splits {
		var next []string
		for _, w := range words {
			next = splitIsolated(next, re, w)
		}
		words = next
	}
	for _, w := range words {
		if t.byteLevel {
			var b strings.Builder
			for i := 0; i < len(w); i++ {
				b.WriteRune(byteToUnicode[w[i]])
			}
			w = b.String()
		}
		ids = append(ids, t.word(w)...)
	}
	return ids
}

// splitIsolated appends the regex matches of s and the gaps between them.
func splitIsolated(out []string, re *regexp2.Regexp, s string) []string {
	runes := []rune(s)
	last := 0
	m, _ := re.FindRunesMatch(runes)
	for m != nil {
		if m.Index > last {
			out = append(out, string(runes[last:m.Index]))
		}
		if m.Length > 0 {
			out = append(out, string(runes[m.Index:m.Index+m.Length]))
		}
		last = m.Index + m.Length
		m, _ = re.FindNextMatch(m)
	}
	if last < len(runes) {
		out = append(out, string(runes[last:]))
	}
	return out
}

// word BPE-encodes one pre-tokenized word, with a cache.
func (t *Tokenizer) word(w string) []int {
	t.cacheMu.Lock()
	if ids, ok := t.cache[w]; ok {
		t.cacheMu.Unlock()
		return ids
	}
	t.cacheMu.Unlock()
	ids := t.bpe(w)
	t.cacheMu.Lock()
	if len(t.cache) > 100000 {
		clear(t.cache)
	}
	t.cache[w] = ids
	t.cacheMu.Unlock()
	return ids
}

func (t *Tokenizer) bpe(w string) []int {
	if id, ok := t.vocab[w]; ok && (t.ignoreMerges || utf8.RuneCountInString(w) == 1) {
		return []int{id}
	}
	syms := make([]string, 0, len(w))
	for _, r := range w {
		syms = append(syms, string(r))
	}
	// Merge the lowest-ranked adjacent pair until none is in the merge list.
	for len(syms) > 1 {
		best, bi := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := t.ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		// Merge every occurrence of this pair, left to right.
		a, b := syms[bi], syms[bi+1]
		out := syms[:0:0]
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
				out = append(out, a+b)
				i++
			} else {
				out = append(out, syms[i])
			}
		}
		syms = out
	}
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
