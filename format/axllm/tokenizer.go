package axllm

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/edgectl/edgectl/format/tokjson"
	"github.com/edgectl/edgectl/internal/atomicfile"
)

// The runtime's tokenizer file (url_tokenizer_model, the MNN-LLM format):
// "430 <type>", the counts of special, stop and prefix ids, the ids, then
// the vocabulary. Byte-level BPE is type 1, one base64 line per token id
// with the token's bytes (gaps in the id space are written as empty
// tokens); SentencePiece BPE is type 0 (tokenizer_sp.go).

// Tokenizer file types (the "430 <type>" header).
const (
	TokenizerSentencePiece = 0
	TokenizerByteLevel     = 1 // tiktoken-style byte-level BPE
)

// tokenizerTxtMagic starts every tokenizer file.
const tokenizerTxtMagic = "430 "

// IsTokenizerTxt reports whether path is a runtime tokenizer file.
func IsTokenizerTxt(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(tokenizerTxtMagic))
	_, err = io.ReadFull(f, b)
	return err == nil && string(b) == tokenizerTxtMagic
}

// CheckTokenizerExport reports whether WriteTokenizerTxt can export the
// tokenizer.json at path.
func CheckTokenizerExport(path string) error {
	tj, err := tokjson.Load(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%s: no tokenizer.json and no *_tokenizer.txt", filepath.Dir(path))
		}
		return err
	}
	if _, err = byteLevelTokens(tj); err != nil && isSentencePieceJSON(tj) {
		_, err = sentencePieces(tj)
	}
	return err
}

// byteLevelTokens returns every token's bytes in id order: added tokens as
// their text, vocabulary tokens decoded from the byte-level alphabet.
func byteLevelTokens(tj *tokjson.File) ([][]byte, error) {
	if tj.Model.Type != "BPE" || len(tj.Model.Vocab) == 0 {
		return nil, fmt.Errorf("%s: model type %q; the axllm tokenizer export handles byte-level BPE only", tj.Path, tj.Model.Type)
	}
	added := map[int]bool{}
	for _, a := range tj.AddedTokens {
		added[a.ID] = true
	}
	toks := tj.Tokens()
	out := make([][]byte, len(toks))
	for id, tok := range toks {
		if added[id] {
			out[id] = []byte(tok)
			continue
		}
		raw, ok := tokjson.ByteLevelDecode(tok)
		if !ok {
			return nil, fmt.Errorf("%s: token %q (id %d) is not byte-level BPE; the axllm tokenizer export handles byte-level BPE only", tj.Path, tok, id)
		}
		out[id] = raw
	}
	return out, nil
}

// WriteTokenizerTxt writes the runtime's tokenizer file for a
// tokenizer.json (atomically): type 1 for byte-level BPE, type 0 for
// SentencePiece BPE, with every added token as a special id and stopIDs as
// the stop ids.
func WriteTokenizerTxt(tokenizerJSONPath, dst string, stopIDs []int) error {
	tj, err := tokjson.Load(tokenizerJSONPath)
	if err != nil {
		return err
	}
	var pieces []Piece
	toks, err := byteLevelTokens(tj)
	if err != nil && isSentencePieceJSON(tj) {
		pieces, err = sentencePieces(tj)
	}
	if err != nil {
		return err
	}
	var special []int
	seen := map[int]bool{}
	for _, a := range tj.AddedTokens {
		if a.ID >= 0 && !seen[a.ID] {
			seen[a.ID] = true
			special = append(special, a.ID)
		}
	}
	sort.Ints(special)
	out, err := atomicfile.Create(dst, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	w := bufio.NewWriterSize(out.File, 1<<20)
	typ := TokenizerByteLevel
	if pieces != nil {
		typ = TokenizerSentencePiece
	}
	fmt.Fprintf(w, "%s%d\n%d %d 0\n", tokenizerTxtMagic, typ, len(special), len(stopIDs))
	for _, id := range append(special, stopIDs...) {
		w.WriteString(strconv.Itoa(id) + " ")
	}
	w.WriteByte('\n')
	if pieces != nil {
		writeSentencePieceVocab(w, pieces)
	} else {
		fmt.Fprintf(w, "%d\n", len(toks))
		for _, raw := range toks {
			w.WriteString(base64.StdEncoding.EncodeToString(raw))
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Commit()
}
