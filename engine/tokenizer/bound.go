package tokenizer

import "unicode/utf8"

// MinTokens is a lower bound on the number of tokens text encodes to
// (without BOS/EOS), found in one pass over the text without tokenizing
// it, or 0 when none is known. It lets a server refuse a prompt whose size
// already passes the context window before any tokenizing work: a text of
// B bytes has at least ceil(B / M) tokens, M being the most input bytes
// one token can stand for (maxTokenBytes).
//
// Where a run of unknown characters fuses into one unk token (fuse_unk
// without a complete byte fallback), only the bytes of characters the
// vocabulary holds count: they are never part of an unk, and merge only
// into pieces of at most M bytes.
func (t *Tokenizer) MinTokens(text string) int {
	m := t.maxTokenBytes()
	if m <= 0 || text == "" {
		return 0
	}
	counted := len(text)
	if t.fusesUnknown() {
		counted = t.knownBytes(text)
	}
	return (counted + m - 1) / m
}

// maxTokenBytes is the most bytes of input text one token can stand for,
// or 0 when one token can swallow any amount of input: WordPiece (an
// unknown word is one [UNK]) and added tokens that strip the whitespace
// beside them. It is the longest piece or added token, at least 4 (an
// unknown character, which becomes one unk or its bytes, is at most 4
// bytes of UTF-8), tripled under NFC (composition turns up to 3 bytes of
// input into one byte of normalized text: Hangul jamo into a syllable).
// SentencePiece's space → ▁ and prepended ▁ only grow the text.
func (t *Tokenizer) maxTokenBytes() int {
	if t.wp != nil {
		return 0
	}
	n := 4
	for _, p := range t.pieces {
		n = max(n, len(p))
	}
	added := t.added
	if t.spm != nil {
		n = max(n, t.spm.maxPiece)
		added = append(added[:len(added):len(added)], t.spm.added...)
	}
	for _, a := range added {
		if a.lstrip || a.rstrip {
			return 0
		}
		n = max(n, len(a.content))
	}
	if t.nfc {
		n *= 3
	}
	return n
}

// fusesUnknown reports whether a run of unknown characters may become a
// single unk token.
func (t *Tokenizer) fusesUnknown() bool {
	if t.spm != nil || t.byteLevel || !t.fuseUnk || t.unk < 0 {
		return false
	}
	if t.byteFallback {
		for _, id := range t.byteToken {
			if id < 0 {
				return true // a byte without its <0xXX> token falls to unk
			}
		}
		return false
	}
	return true
}

// knownBytes counts the bytes of text's characters that are vocabulary
// pieces by themselves (as normalization writes a space: ▁).
func (t *Tokenizer) knownBytes(text string) int {
	var ascii [utf8.RuneSelf]int8 // 0 unknown yet, 1 known, -1 not a piece
	n := 0
	for _, r := range text {
		size := utf8.RuneLen(r)
		if r == utf8.RuneError {
			size = 1
		}
		if r < utf8.RuneSelf {
			if ascii[r] == 0 {
				ascii[r] = -1
				if t.isPiece(r) {
					ascii[r] = 1
				}
			}
			if ascii[r] > 0 {
				n += size
			}
			continue
		}
		if t.isPiece(r) {
			n += size
		}
	}
	return n
}

func (t *Tokenizer) isPiece(r rune) bool {
	s := string(r)
	if r == ' ' && (t.spmSpaces || t.metaspace) {
		s = "▁"
	}
	_, ok := t.vocab[s]
	return ok
}
