package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/edgectl/edgectl/format/tokjson"
)

// BERT's text rules as the `tokenizers` library applies them: the
// BertNormalizer (control-character cleanup, spaces around CJK ideographs,
// accent stripping, lower-casing) and the BertPreTokenizer (split on
// whitespace, isolate every punctuation character). The character classes
// that come from the library's Unicode tables (control, punctuation,
// nonspacing mark) are bert_unicode_tables.go, probed from the library
// itself, so that they agree on characters newer Unicode versions changed.

// bertDefaultSteps is BertNormalizer with the library's defaults (clean
// text, CJK spacing, lower-casing, hence accent stripping) and
// BertPreTokenizer: what an uncased BERT ships, and what a GGUF "bert"
// vocabulary, which records no normalizer, gets.
var bertDefaultSteps = []tokjson.Step{{Type: "BertNormalizer", CleanText: true, HandleChineseChars: true, Lowercase: true}}
var bertDefaultPreSteps = []tokjson.Step{{Type: "BertPreTokenizer"}}

// normalizeStep is one normalizer of a WordPiece tokenizer.
type normalizeStep func(string) string

// normalizeSteps turns tokenizer.json's normalizer steps into functions,
// refusing those the engine does not implement.
func normalizeSteps(steps []tokjson.Step) ([]normalizeStep, error) {
	var out []normalizeStep
	for _, s := range steps {
		switch s.Type {
		case "BertNormalizer":
			s := s
			strip := s.Lowercase // strip_accents null follows lowercase
			if s.StripAccents != nil {
				strip = *s.StripAccents
			}
			out = append(out, func(x string) string {
				if s.CleanText {
					x = bertCleanText(x)
				}
				if s.HandleChineseChars {
					x = bertSpaceCJK(x)
				}
				if strip {
					x = stripAccents(norm.NFD.String(x))
				}
				if s.Lowercase {
					x = lowercase(x)
				}
				return x
			})
		case "Lowercase":
			out = append(out, lowercase)
		case "StripAccents": // drops nonspacing marks only; NFD is its own step
			out = append(out, stripAccents)
		case "NFD":
			out = append(out, norm.NFD.String)
		case "NFC":
			out = append(out, norm.NFC.String)
		case "NFKD":
			out = append(out, norm.NFKD.String)
		case "NFKC":
			out = append(out, norm.NFKC.String)
		default:
			return nil, fmt.Errorf("normalizer %q is not supported with a WordPiece model (the engine implements BertNormalizer, Lowercase, StripAccents and NFC/NFD/NFKC/NFKD)", s.Type)
		}
	}
	return out, nil
}

// bertCleanText drops NUL, U+FFFD and control characters and turns every
// kind of whitespace into a plain space.
func bertCleanText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == 0 || r == utf8.RuneError || bertIsControl(r):
			return -1
		case unicode.IsSpace(r):
			return ' '
		}
		return r
	}, s)
}

// bertIsControl: the library's "other" categories (Cc, Cf, Co, …), but
// tab, newline and carriage return count as whitespace.
func bertIsControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return inRanges(bertControl, r)
}

// bertIsCJK reports a CJK ideograph: the library's (and Google BERT's)
// fixed code-point ranges, not all of Han, Hiragana, Katakana or Hangul.
func bertIsCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F || r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}

// bertSpaceCJK puts a space on both sides of each CJK ideograph, so the
// pre-tokenizer makes each one a word.
func bertSpaceCJK(s string) string {
	var b strings.Builder
	for i, r := range s {
		if bertIsCJK(r) {
			if b.Len() == 0 {
				b.Grow(len(s) + 16)
				b.WriteString(s[:i])
			}
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		} else if b.Len() > 0 {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

// stripAccents drops nonspacing marks (the caller decomposes first).
func stripAccents(s string) string {
	return strings.Map(func(r rune) rune {
		if inRanges(bertNonspacingMark, r) {
			return -1
		}
		return r
	}, s)
}

// lowercase maps each character to its full lowercase form, as Rust's
// char::to_lowercase does: Go's simple mapping, except where the library's
// differs (bertLower: U+0130 İ → "i̇", and letters newer than Go's tables).
func lowercase(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if m, ok := bertLower[r]; ok {
			b.WriteString(m)
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// bertIsPunct: all ASCII punctuation (symbols like $ + < = > ^ ` | ~
// included, as Google BERT did) and the library's Unicode P* categories.
func bertIsPunct(r rune) bool { return inRanges(bertPunct, r) }

// preTokenizeStep splits words further, appending to out.
type preTokenizeStep func(out []string, word string) []string

func preTokenizeSteps(steps []tokjson.Step) ([]preTokenizeStep, error) {
	var out []preTokenizeStep
	for _, s := range steps {
		switch {
		case s.Type == "BertPreTokenizer":
			out = append(out, splitWhitespace, splitPunct)
		case s.Type == "WhitespaceSplit":
			out = append(out, splitWhitespace)
		case s.Type == "Punctuation" && s.Behavior == "Isolated":
			out = append(out, splitPunct)
		default:
			return nil, fmt.Errorf("pre_tokenizer %q (behavior %s) is not supported with a WordPiece model (the engine implements BertPreTokenizer, WhitespaceSplit and Isolated Punctuation)", s.Type, s.Behavior)
		}
	}
	return out, nil
}

// splitWhitespace splits on whitespace, dropping it.
func splitWhitespace(out []string, s string) []string {
	return append(out, strings.FieldsFunc(s, unicode.IsSpace)...)
}

// splitPunct makes each punctuation character a word of its own.
func splitPunct(out []string, s string) []string {
	start := 0
	for i, r := range s {
		if bertIsPunct(r) {
			if start < i {
				out = append(out, s[start:i])
			}
			n := utf8.RuneLen(r) // r is never RuneError: U+FFFD is not punctuation
			out = append(out, s[i:i+n])
			start = i + n
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// inRanges reports whether r lies in one of the sorted, disjoint ranges.
func inRanges(ranges [][2]rune, r rune) bool {
	lo, hi := 0, len(ranges)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case r < ranges[m][0]:
			hi = m
		case r > ranges[m][1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}
