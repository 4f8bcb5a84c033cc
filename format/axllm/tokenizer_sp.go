package axllm

import (
	"bufio"
	"encoding/base64"
	"fmt"
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

// SentencePiece piece types (sentencepiece's ModelProto.SentencePiece.Type,
// the numbers both the exporter and the loader use).
const (
	PieceNormal      = 1
	PieceUnknown     = 2
	PieceControl     = 3
	PieceUserDefined = 4
	PieceUnused      = 5
	PieceByte        = 6
)

// Piece is one vocabulary line of a tokenizer file. In a type-0 file it
// is the piece as written (▁ already replaced by a space), its score and
// its type; in a type-1 file only Text is set (the token's raw bytes).
type Piece struct {
	Text  string
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
func sentencePieces(tj *tokjson.File) ([]Piece, error) {
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
	out := make([]Piece, len(toks))
	for id, tok := range toks {
		p := Piece{Text: strings.ReplaceAll(tok, "▁", " "), Type: PieceNormal}
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
			p = Piece{Text: fmt.Sprintf("<edgectl_unused_%d>", id), Type: PieceUnused}
		case id == unk:
			p.Type, p.Score = PieceUnknown, 0
		case isAdded && a.Special:
			p.Type, p.Score = PieceControl, 0
		case isAdded:
			p.Type, p.Score = PieceUserDefined, 0
		case isBytePiece(tok):
			// Kept as "<0xXX>": the loader's byte fallback looks pieces up
			// by that spelling (Sentencepiece::byte_to_piece).
			p.Text, p.Type, p.Score = tok, PieceByte, 0
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
func writeSentencePieceVocab(w *bufio.Writer, pieces []Piece) {
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
