package axllm

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/format/tokjson"
)

// TokenizerTxt is a parsed axllm tokenizer file: what the runtime's loader
// reads from it. The fake runtime and the tests use it.
type TokenizerTxt struct {
	Type    int // TokenizerSentencePiece or TokenizerByteLevel
	Special []int
	Stop    []int
	Prefix  []int
	Pieces  []Piece // by id
}

// ReadTokenizerTxt parses an axllm tokenizer file (types 0 and 1).
func ReadTokenizerTxt(r io.Reader, name string) (*TokenizerTxt, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	line := 0
	next := func() (string, error) {
		s, err := br.ReadString('\n')
		line++
		if err != nil && !(err == io.EOF && s != "") {
			return "", fmt.Errorf("%s: line %d: %v", name, line, err)
		}
		return strings.TrimRight(s, "\r\n"), nil
	}
	ints := func(s string) ([]int, error) {
		var out []int
		for _, f := range strings.Fields(s) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d: %q is not an integer", name, line, f)
			}
			out = append(out, n)
		}
		return out, nil
	}
	s, err := next()
	if err != nil {
		return nil, err
	}
	head, err := ints(s)
	if err != nil || len(head) != 2 || head[0] != 430 {
		return nil, fmt.Errorf("%s: line 1 is %q, want \"430 <type>\" (not an axllm tokenizer file)", name, s)
	}
	t := &TokenizerTxt{Type: head[1]}
	if t.Type != TokenizerSentencePiece && t.Type != TokenizerByteLevel {
		return nil, fmt.Errorf("%s: tokenizer type %d: only 0 (SentencePiece) and 1 (tiktoken) are read here", name, t.Type)
	}
	if s, err = next(); err != nil {
		return nil, err
	}
	counts, err := ints(s)
	if err != nil || len(counts) != 3 {
		return nil, fmt.Errorf("%s: line 2 is %q, want \"<special> <stop> <prefix>\" counts", name, s)
	}
	if s, err = next(); err != nil {
		return nil, err
	}
	ids, err := ints(s)
	if err != nil {
		return nil, err
	}
	if len(ids) != counts[0]+counts[1]+counts[2] {
		return nil, fmt.Errorf("%s: line 3 has %d ids, line 2 announces %d", name, len(ids), counts[0]+counts[1]+counts[2])
	}
	t.Special, t.Stop, t.Prefix = ids[:counts[0]], ids[counts[0]:counts[0]+counts[1]], ids[counts[0]+counts[1]:]
	if s, err = next(); err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > tokjson.MaxVocab {
		return nil, fmt.Errorf("%s: line 4 is %q, want the vocabulary size", name, s)
	}
	t.Pieces = make([]Piece, n)
	for i := range n {
		if s, err = next(); err != nil {
			return nil, err
		}
		f := strings.Fields(s)
		want := 1
		if t.Type == TokenizerSentencePiece {
			want = 3
		}
		if len(f) != want {
			return nil, fmt.Errorf("%s: line %d (id %d) has %d fields, want %d", name, line, i, len(f), want)
		}
		raw, err := base64.StdEncoding.DecodeString(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s: line %d (id %d): %v", name, line, i, err)
		}
		p := Piece{Text: string(raw), Type: PieceNormal}
		if t.Type == TokenizerSentencePiece {
			if p.Score, err = strconv.ParseFloat(f[1], 32); err != nil {
				return nil, fmt.Errorf("%s: line %d (id %d): score %q", name, line, i, f[1])
			}
			if p.Type, err = strconv.Atoi(f[2]); err != nil || p.Type < PieceNormal || p.Type > PieceByte {
				return nil, fmt.Errorf("%s: line %d (id %d): piece type %q, want 1–6", name, line, i, f[2])
			}
		}
		t.Pieces[i] = p
	}
	return t, nil
}
