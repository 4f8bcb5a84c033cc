package tokenizer

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// llama.cpp's token types (tokenizer.ggml.token_type).
const (
	typeNormal      = 1
	typeUnknown     = 2
	typeControl     = 3
	typeUserDefined = 4
	typeUnused      = 5
	typeByte        = 6
)

// fromSPM builds the score-form SentencePiece tokenizer from GGUF
// metadata, with llama.cpp's defaults where a key is absent: scores 0, BOS
// 1, EOS 2, unk 0, add_bos true, add_eos false, add_space_prefix true.
func fromSPM(v GGUFVocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if v.Scores != nil && len(v.Scores) < n {
		return nil, fmt.Errorf("tokenizer.ggml.scores holds %d scores for %d tokens; the file is corrupt (convert the model again, or put its tokenizer.json beside it)", len(v.Scores), n)
	}
	m := &spm{scores: make([]float32, n), addSpacePrefix: true}
	if v.AddSpacePrefix != nil {
		m.addSpacePrefix = *v.AddSpacePrefix
	}
	if v.AddEOS != nil {
		m.addEOS = *v.AddEOS
	}
	for i := range m.scores {
		if v.Scores != nil {
			m.scores[i] = v.Scores[i]
		}
		if math.IsNaN(float64(m.scores[i])) {
			m.scores[i] = float32(math.Inf(-1)) // a NaN would break the queue's order
		}
	}
	t := &Tokenizer{spm: m, vocab: make(map[string]int, n), pieces: make([][]byte, n), special: make([]bool, n),
		unk: -1, bos: -1, source: "GGUF tokenizer.ggml.* (SentencePiece)"}
	for id, s := range v.Tokens {
		if s == "" {
			continue // llama.cpp renames it; it can never be spelled
		}
		m.maxPiece = max(m.maxPiece, len(s))
		if _, dup := t.vocab[s]; !dup {
			t.vocab[s] = id
		}
		typ := int32(typeNormal)
		if id < len(v.Types) {
			typ = v.Types[id]
		}
		switch typ {
		case typeNormal:
			t.pieces[id] = []byte(strings.ReplaceAll(s, "▁", " "))
		case typeUnknown, typeControl:
			t.special[id] = true
			t.pieces[id] = []byte(s)
			m.added = append(m.added, addedToken{content: s, id: id})
		case typeUserDefined:
			t.pieces[id] = []byte(s) // verbatim: ▁ stays ▁
			m.added = append(m.added, addedToken{content: s, id: id})
		case typeByte:
			if b, ok := byteTokenValue(s); ok {
				t.pieces[id] = []byte{b}
			} else {
				t.pieces[id] = []byte(strings.ReplaceAll(s, "▁", " "))
			}
		default: // unused and undefined types decode to nothing, as in llama.cpp
		}
	}
	// Longest first; equal lengths keep id order.
	sort.SliceStable(m.added, func(i, j int) bool { return len(m.added[i].content) > len(m.added[j].content) })
	// A byte falls back to the piece <0xXX>, else to the piece that is
	// that one byte (llama.cpp's byte_to_token), whatever their types.
	for b := range t.byteToken {
		t.byteToken[b] = -1
		if id, ok := t.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			t.byteToken[b] = id
		} else if id, ok := t.vocab[string([]byte{byte(b)})]; ok {
			t.byteToken[b] = id
		}
	}
	inRange := func(id, def int) int {
		if id < 0 {
			id = def
		}
		if id >= n {
			return -1
		}
		return id
	}
	t.unk = inRange(v.Unk, 0)
	t.bos = inRange(v.BOS, 1)
	if eos := inRange(v.EOS, 2); eos >= 0 {
		t.eos, t.eosToken = []int{eos}, v.Tokens[eos]
	}
	if t.bos >= 0 {
		t.bosToken = v.Tokens[t.bos]
		t.addBOS = v.AddBOS == nil || *v.AddBOS
	}
	return t, nil
}

// byteTokenValue reads the byte a <0xXX> token stands for.
func byteTokenValue(s string) (byte, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range s[3:5] {
		switch {
		case c >= '0' && c <= '9':
			b = b<<4 | byte(c-'0')
		case c >= 'A' && c <= 'F':
			b = b<<4 | byte(c-'A'+10)
		case c >= 'a' && c <= 'f':
			b = b<<4 | byte(c-'a'+10)
		default:
			return 0, false
		}
	}
	return b, true
}
