package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/edgectl/edgectl/format/axllm"
)

// tokenizer is the fake's reading of the axllm tokenizer file, following
// the facts in docs/axllm.md "Tokenizers" (ax-llm's vendored
// third_party/tokenizer.axera/src/tokenizer/tokenizer.cpp): type 0
// SentencePiece merges the adjacent pair whose joined NORMAL piece scores
// highest (ties: leftmost), with <0xXX> byte fallback for unknown pieces;
// type 1 matches the longest known byte string. decode returns each piece's
// text, as the vendor's does (a BYTE piece reads "<0x0A>").
type tokenizer struct {
	t      *axllm.TokenizerTxt
	normal map[string]int // type 0 NORMAL pieces; type 1: every token
	other  map[string]int // type 0 pieces of other types, looked up by text
	maxLen int
}

// loadTokenizer fails with the vendor loader's messages
// (Tokenizer::createTokenizer) and prints its "tokenizer_type = N" line.
func loadTokenizer(path string) (*tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("Failed: can't load tokenzier from: %s.", path)
	}
	defer f.Close()
	var magic, typ int
	if _, err := fmt.Fscanf(f, "%d %d\n", &magic, &typ); err != nil || magic != 430 {
		return nil, fmt.Errorf("Failed: magic number is wrong from: %s.", path)
	}
	fmt.Printf("tokenizer_type = %d\n", typ)
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	t, err := axllm.ReadTokenizerTxt(f, path)
	if err != nil {
		return nil, err
	}
	tk := &tokenizer{t: t, normal: map[string]int{}, other: map[string]int{}}
	for id, p := range t.Pieces {
		if t.Type == 1 || p.Type == 1 {
			if _, dup := tk.normal[p.Text]; !dup {
				tk.normal[p.Text] = id
			}
		} else {
			tk.other[p.Text] = id
		}
		tk.maxLen = max(tk.maxLen, len(p.Text))
	}
	if len(t.Pieces) == 0 {
		return nil, errors.New(path + ": empty vocabulary")
	}
	return tk, nil
}

func (tk *tokenizer) encode(s string) []int {
	if tk.t.Type == 1 {
		return tk.longestMatch(s)
	}
	return tk.bpe(s)
}

func (tk *tokenizer) longestMatch(s string) []int {
	var ids []int
	for i := 0; i < len(s); {
		n := min(tk.maxLen, len(s)-i)
		for ; n > 0; n-- {
			if id, ok := tk.normal[s[i:i+n]]; ok {
				ids = append(ids, id)
				break
			}
		}
		if n == 0 { // no token for this byte: skipped, as the vendor's loop reports and moves on
			n = 1
		}
		i += n
	}
	return ids
}

func (tk *tokenizer) bpe(s string) []int {
	var sym []string
	for len(s) > 0 {
		_, n := utf8.DecodeRuneInString(s)
		sym = append(sym, s[:n])
		s = s[n:]
	}
	for {
		best, bestScore := -1, 0.0
		for i := 0; i+1 < len(sym); i++ {
			if id, ok := tk.normal[sym[i]+sym[i+1]]; ok {
				if sc := tk.t.Pieces[id].Score; best < 0 || sc > bestScore {
					best, bestScore = i, sc
				}
			}
		}
		if best < 0 {
			break
		}
		sym[best] += sym[best+1]
		sym = append(sym[:best+1], sym[best+2:]...)
	}
	var ids []int
	for _, p := range sym {
		if id, ok := tk.other[p]; ok {
			ids = append(ids, id)
		} else if id, ok := tk.normal[p]; ok {
			ids = append(ids, id)
		} else {
			for _, b := range []byte(p) {
				if id, ok := tk.other[fmt.Sprintf("<0x%02X>", b)]; ok {
					ids = append(ids, id)
				}
			}
		}
	}
	return ids
}

func (tk *tokenizer) decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(tk.t.Pieces[id].Text)
	}
	return b.String()
}
