package axllm_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine/tokenizer"
	"github.com/edgectl/edgectl/format/axllm"
)

// spCorpus mixes the fixture's domain with text its vocabulary lacks
// (byte fallback: accents, CJK, emoji, control characters).
var spCorpus = []string{
	"Once upon a time, there was a little girl named Lily.",
	"She liked to play outside with her dog, Max!\nThey ran and ran.",
	`"Why?" asked Tom. 'Because it's fun,' said Mom.`,
	"Numbers 12345 and symbols $ % & * () [] {} <> ~ ` ^ |",
	"Café naïve façade — “quotes” … 日本語のテキスト 🙂🚀",
	"tabs\tand  double  spaces   and trailing space ",
	"\n\nnew lines first",
}

// vendorSP is a test-side reader of the type-0 file that follows the
// vendor loader's algorithm (docs/pulsar2.md "Tokenizers"): NORMAL pieces
// are merged pairwise by the score of the joined piece, the input split in
// UTF-8 characters; an unknown piece falls back to its "<0xXX>" pieces.
type vendorSP struct {
	t      *axllm.TokenizerTxt
	normal map[string]int
	other  map[string]int
	unk    int
}

func newVendorSP(t *axllm.TokenizerTxt) *vendorSP {
	v := &vendorSP{t: t, normal: map[string]int{}, other: map[string]int{}}
	for id, p := range t.Pieces {
		if p.Type == axllm.PieceNormal {
			v.normal[p.Text] = id
			continue
		}
		v.other[p.Text] = id
		if p.Type == axllm.PieceUnknown {
			v.unk = id
		}
	}
	return v
}

func (v *vendorSP) encode(text string) []int {
	var syms []string
	for _, r := range text {
		syms = append(syms, string(r))
	}
	for {
		best, bestScore := -1, 0.0
		for i := 0; i+1 < len(syms); i++ {
			id, ok := v.normal[syms[i]+syms[i+1]]
			if !ok {
				continue
			}
			if s := v.t.Pieces[id].Score; best < 0 || s > bestScore {
				best, bestScore = i, s
			}
		}
		if best < 0 {
			break
		}
		syms[best] += syms[best+1]
		syms = append(syms[:best+1], syms[best+2:]...)
	}
	var ids []int
	for _, s := range syms {
		id, ok := v.normal[s]
		if !ok {
			id, ok = v.other[s]
		}
		if ok && id != v.unk {
			ids = append(ids, id)
			continue
		}
		for _, b := range []byte(s) {
			bid, ok := v.other["<0x"+strings.ToUpper(strconv.FormatUint(uint64(b)|0x100, 16)[1:])+">"]
			if !ok {
				bid = v.unk
			}
			ids = append(ids, bid)
		}
	}
	return ids
}

// decode concatenates the pieces; a BYTE piece stands for its byte (the
// SentencePiece meaning of "<0xXX>").
func (v *vendorSP) decode(ids []int) string {
	var b []byte
	for _, id := range ids {
		p := v.t.Pieces[id]
		if p.Type == axllm.PieceByte {
			n, _ := strconv.ParseUint(p.Text[3:5], 16, 8)
			b = append(b, byte(n))
			continue
		}
		if p.Type == axllm.PieceControl || p.Type == axllm.PieceUnknown {
			continue // as the original decoder: special tokens are not text
		}
		b = append(b, p.Text...)
	}
	return string(b)
}

func exportTokenizer(t *testing.T, dir string, stops []int) *axllm.TokenizerTxt {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "tok.txt")
	if err := axllm.WriteTokenizerTxt(filepath.Join(dir, "tokenizer.json"), dst, stops); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tt, err := axllm.ReadTokenizerTxt(f, dst)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// The SentencePiece export round-trips the corpus through the exported
// file alone and agrees with the original tokenizer.json tokenizer.
func TestSentencePieceExportRoundTrip(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "models", "tinystories-656k")
	orig, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tt := exportTokenizer(t, dir, []int{2})
	if tt.Type != axllm.TokenizerSentencePiece || len(tt.Pieces) != orig.VocabSize() {
		t.Fatalf("type %d with %d pieces, want 0 with %d", tt.Type, len(tt.Pieces), orig.VocabSize())
	}
	if len(tt.Stop) != 1 || tt.Stop[0] != 2 || len(tt.Special) != 3 {
		t.Errorf("special %v stop %v", tt.Special, tt.Stop)
	}
	if p := tt.Pieces[0]; p.Type != axllm.PieceUnknown || p.Text != "<unk>" {
		t.Errorf("id 0 = %+v, want the UNKNOWN piece <unk>", p)
	}
	if p := tt.Pieces[3]; p.Text != "\n" || p.Type != axllm.PieceNormal {
		t.Errorf("id 3 = %+v, want the NORMAL piece \"\\n\"", p)
	}
	v := newVendorSP(tt)
	same, total, inVocab := 0, 0, 0
	for _, text := range spCorpus {
		origIDs := orig.Encode(text, false)
		want := orig.Decode(origIDs)
		// The vendor encoder does not normalize: the space the
		// tokenizer.json normalizer prepends is passed in the text.
		ids := v.encode(" " + text)
		got := strings.TrimPrefix(v.decode(ids), " ")
		// Characters outside this vocabulary (it has no <0xXX> pieces)
		// become <unk> on both sides; everything else must survive.
		if got != want {
			t.Errorf("round trip through the export\n got %q\nwant %q, as the original tokenizer", got, want)
		}
		if want == text {
			inVocab++
		}
		if dec := strings.TrimPrefix(v.decode(origIDs), " "); dec != want {
			t.Errorf("original ids decoded through the export: %q, want %q", dec, want)
		}
		total++
		if equalInts(ids, origIDs) {
			same++
		}
	}
	t.Logf("%d/%d corpus lines encode to the same ids as the original tokenizer", same, total)
	if inVocab < 4 {
		t.Errorf("only %d corpus lines round-trip exactly", inVocab)
	}
	if same == 0 {
		t.Error("no line encodes to the original ids: the scores do not follow the merges")
	}
}

// A byte-level vocabulary still exports as type 1, and the original ids
// decode through it to the original text.
func TestByteLevelExportRoundTrip(t *testing.T) {
	dir := qwen3Tok
	orig, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tt := exportTokenizer(t, dir, []int{151645})
	if tt.Type != 1 {
		t.Fatalf("type %d, want 1", tt.Type)
	}
	for _, text := range spCorpus {
		ids := orig.Encode(text, false)
		var b bytes.Buffer
		for _, id := range ids {
			b.WriteString(tt.Pieces[id].Text)
		}
		if b.String() != text || orig.Decode(ids) != text {
			t.Errorf("decode through the export %q, original %q, want %q", b.String(), orig.Decode(ids), text)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Byte fallback: a Llama-2-style vocabulary with <0xXX> pieces exports
// them as BYTE pieces under that spelling, and text outside the
// vocabulary round-trips through them.
func TestSentencePieceByteFallbackRoundTrip(t *testing.T) {
	var vocab strings.Builder
	vocab.WriteString(`"<unk>": 0, "<s>": 1, "</s>": 2`)
	for b := range 256 {
		vocab.WriteString(`, "<0x` + strings.ToUpper(strconv.FormatUint(uint64(b)|0x100, 16)[1:]) + `>": ` + strconv.Itoa(3+b))
	}
	vocab.WriteString(`, "\u2581": 259, "a": 260, "b": 261, "\u2581a": 262, "ab": 263, "\u2581ab": 264`)
	js := `{"model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "vocab": {` + vocab.String() + `},
		"merges": ["\u2581 a", "a b", "\u2581a b"]},
	"added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true}],
	"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
	"decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}}`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	orig, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tt := exportTokenizer(t, dir, []int{2})
	if p := tt.Pieces[3+0x0A]; p.Type != axllm.PieceByte || p.Text != "<0x0A>" {
		t.Errorf("id 13 = %+v, want BYTE <0x0A>", p)
	}
	if p := tt.Pieces[264]; p.Type != axllm.PieceNormal || p.Text != " ab" || p.Score != -2 {
		t.Errorf("id 264 = %+v, want NORMAL \" ab\" scored −2 (merge rank 2)", p)
	}
	v := newVendorSP(tt)
	for _, text := range []string{"ab ab a b", "ab\né 🙂 ba", "\tab\x00"} {
		origIDs := orig.Encode(text, false)
		ids := v.encode(" " + text)
		got := strings.TrimPrefix(v.decode(ids), " ")
		if got != text || orig.Decode(origIDs) != text {
			t.Errorf("round trip %q: export %q, original %q", text, got, orig.Decode(origIDs))
		}
		if !equalInts(ids, origIDs) {
			t.Errorf("%q: export encodes %v, original %v", text, ids, origIDs)
		}
	}
}

// qwen3Tok is a byte-level BPE fixture (6400 tokens) in Qwen3's layout.
var qwen3Tok = filepath.Join("..", "..", "testdata", "models", "qwen3-tokenizer")

// The exported tokenizer file: header, then token bytes by id, checked
// against tokens whose bytes are known independently.
func TestWriteTokenizerTxt(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "t.txt")
	if err := axllm.WriteTokenizerTxt(filepath.Join(qwen3Tok, "tokenizer.json"), dst, []int{2, 0}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(dst)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != "430 1" {
		t.Fatalf("header %q", lines[0])
	}
	counts := strings.Fields(lines[1])
	ids := strings.Fields(lines[2])
	if len(counts) != 3 || counts[1] != "2" || counts[2] != "0" || len(ids) < 3 || ids[len(ids)-2] != "2" || ids[len(ids)-1] != "0" {
		t.Errorf("special/stop lines %q %q", lines[1], lines[2])
	}
	if lines[3] != "6400" || len(lines) != 4+6400 {
		t.Fatalf("vocab count %q, %d token lines", lines[3], len(lines)-4)
	}
	tok := func(id int) string {
		b, err := base64.StdEncoding.DecodeString(lines[4+id])
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// id 2 is <|im_end|>, 300 is "he", 302 is "ãĢĤ" = the bytes of "。".
	for id, want := range map[int]string{2: "<|im_end|>", 300: "he", 302: "。"} {
		if got := tok(id); got != want {
			t.Errorf("token %d = %q, want %q", id, got, want)
		}
	}
}
