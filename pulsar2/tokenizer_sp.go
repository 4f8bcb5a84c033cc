package pulsar2

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/format/tokjson"
)

// The axllm tokenizer file's SentencePiece variant (type 0), as AXERA's
// exporter writes it (ax-llm third_party/tokenizer.axera/tests/convert_tokenizer.py)
// and its MNN-derived loader reads it (…/src/tokenizer/tokenizer.cpp,
// Sentencepiece::load_vocab): after the shared header, one line with the
// piece count, then one line per id: base64(piece with ▁ written as a space),
// the score, the piece type. docs/pulsar2.md "Tokenizers" has the details.
const tokenizerTypeSentencePiece = 0

// SentencePiece piece types (sentencepiece's ModelProto.SentencePiece.Type,
// the numbers both the exporter and the loader use).
const (
	spNormal      = 1
	spUnknown     = 2
	spControl     = 3
	spUserDefined = 4
	spUnused      = 5
	spByte        = 6
)

// spPiece is one line of the type-0 vocabulary.
type spPiece struct {
	Text  string // as written: ▁ already replaced by a space
	Score float64
	Type  int
}

// isSentencePieceJSON reports whether tj is a SentencePiece vocabulary
// converted to tokenizer.json: BPE over ▁-marked pieces (Llama-2, Mistral
// v0.1, TinyLlama, Gemma), usually with <0xXX> byte-fallback pieces.
func isSentencePieceJSON(tj *tokjson.File) bool {
	if tj.Model.Type != "BPE" || len(tj.Model.Vocab) == 0 {
		return false
	}
	if tj.Model.ByteFallback {
		return true
	}
	for _, raw := range [][]byte{tj.Normalizer, tj.PreTokenizer, tj.Decoder} {
		if strings.Contains(string(raw), "▁") || strings.Contains(string(raw), `"Metaspace"`) {
			return true
		}
	}
	return false
}

// sentencePieces returns the type-0 vocabulary in id order. Scores follow
// the BPE merge ranks: the loader merges the adjacent pair whose joined
// piece scores highest, so a piece made by merge rank r scores −r, and the
// highest-priority merge wins as in the tokenizer.json BPE model.
func sentencePieces(tj *tokjson.File) ([]spPiece, error) {
	if !isSentencePieceJSON(tj) {
		return nil, fmt.Errorf("%s: model type %q is neither byte-level BPE nor SentencePiece BPE; the axllm tokenizer export handles those two", tj.Path, tj.Model.Type)
	}
	toks := tj.Tokens()
	rank := make(map[string]int, len(tj.Model.Merges))
	for r, m := range tj.Model.Merges {
		joined := m[0] + m[1]
		if _, ok := rank[joined]; !ok {
			rank[joined] = r
		}
	}
	added := map[int]tokjson.AddedToken{}
	for _, a := range tj.AddedTokens {
		added[a.ID] = a
	}
	unk := -1
	if tj.Model.UnkToken != nil {
		if id, ok := tj.ID(*tj.Model.UnkToken); ok {
			unk = id
		}
	}
	out := make([]spPiece, len(toks))
	for id, tok := range toks {
		p := spPiece{Text: strings.ReplaceAll(tok, "▁", " "), Type: spNormal}
		if r, ok := rank[tok]; ok {
			p.Score = -float64(r)
		} else {
			// Not a merge result: single characters and pieces the merges
			// never build; below every merge so they never outrank one.
			p.Score = -float64(len(tj.Model.Merges) + id)
		}
		a, isAdded := added[id]
		switch {
		case tok == "":
			// A hole in the id space: the loader reads "piece score type"
			// with >>, so the piece must not be empty.
			p = spPiece{Text: fmt.Sprintf("<edgectl_unused_%d>", id), Type: spUnused}
		case id == unk:
			p.Type, p.Score = spUnknown, 0
		case isAdded && a.Special:
			p.Type, p.Score = spControl, 0
		case isAdded:
			p.Type, p.Score = spUserDefined, 0
		case isBytePiece(tok):
			// Kept as "<0xXX>": the loader's byte fallback looks pieces up
			// by that spelling (Sentencepiece::byte_to_piece).
			p.Text, p.Type, p.Score = tok, spByte, 0
		}
		out[id] = p
	}
	return out, nil
}

// isBytePiece reports whether tok is a byte-fallback piece "<0xXX>".
func isBytePiece(tok string) bool {
	if len(tok) != 6 || !strings.HasPrefix(tok, "<0x") || tok[5] != '>' {
		return false
	}
	_, err := strconv.ParseUint(tok[3:5], 16, 8)
	return err == nil && strings.ToUpper(tok[3:5]) == tok[3:5]
}

// writeSentencePieceVocab writes the type-0 body: the count, then one
// "base64 score type" line per id.
func writeSentencePieceVocab(w *bufio.Writer, pieces []spPiece) {
	fmt.Fprintf(w, "%d\n", len(pieces))
	for _, p := range pieces {
		w.WriteString(base64.StdEncoding.EncodeToString([]byte(p.Text)))
		w.WriteByte(' ')
		w.WriteString(strconv.FormatFloat(p.Score, 'g', -1, 32))
		w.WriteByte(' ')
		w.WriteString(strconv.Itoa(p.Type))
		w.WriteByte('\n')
	}
}

// TokenizerTxt is a parsed axllm tokenizer file: what the runtime's loader
// reads from it. The fake runtime and the tests use it.
type TokenizerTxt struct {
	Type    int // 0 SentencePiece, 1 tiktoken-style byte-level BPE
	Special []int
	Stop    []int
	Prefix  []int
	Pieces  []spPiece // type 0; for type 1 only Text is set (the raw bytes)
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
	if t.Type != 0 && t.Type != 1 {
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
	t.Pieces = make([]spPiece, n)
	for i := range n {
		if s, err = next(); err != nil {
			return nil, err
		}
		f := strings.Fields(s)
		want := 1
		if t.Type == 0 {
			want = 3
		}
		if len(f) != want {
			return nil, fmt.Errorf("%s: line %d (id %d) has %d fields, want %d", name, line, i, len(f), want)
		}
		raw, err := base64.StdEncoding.DecodeString(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s: line %d (id %d): %v", name, line, i, err)
		}
		p := spPiece{Text: string(raw), Type: spNormal}
		if t.Type == 0 {
			if p.Score, err = strconv.ParseFloat(f[1], 32); err != nil {
				return nil, fmt.Errorf("%s: line %d (id %d): score %q", name, line, i, f[1])
			}
			if p.Type, err = strconv.Atoi(f[2]); err != nil || p.Type < spNormal || p.Type > spByte {
				return nil, fmt.Errorf("%s: line %d (id %d): piece type %q, want 1–6", name, line, i, f[2])
			}
		}
		t.Pieces[i] = p
	}
	return t, nil
}
