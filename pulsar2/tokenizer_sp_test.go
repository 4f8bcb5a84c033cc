package pulsar2

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine/tokenizer"
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
	t      *TokenizerTxt
	normal map[string]int
	other  map[string]int
	unk    int
}

func newVendorSP(t *TokenizerTxt) *vendorSP {
	v := &vendorSP{t: t, normal: map[string]int{}, other: map[string]int{}}
	for id, p := range t.Pieces {
		if p.Type == spNormal {
			v.normal[p.Text] = id
			continue
		}
		v.other[p.Text] = id
		if p.Type == spUnknown {
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
		if p.Type == spByte {
			n, _ := strconv.ParseUint(p.Text[3:5], 16, 8)
			b = append(b, byte(n))
			continue
		}
		if p.Type == spControl || p.Type == spUnknown {
			continue // as the original decoder: special tokens are not text
		}
		b = append(b, p.Text...)
	}
	return string(b)
}

func exportTokenizer(t *testing.T, dir string, stops []int) *TokenizerTxt {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "tok.txt")
	if err := WriteTokenizerTxt(filepath.Join(dir, "tokenizer.json"), dst, stops); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tt, err := ReadTokenizerTxt(f, dst)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// The SentencePiece export round-trips the corpus through the exported
// file alone and agrees with the original tokenizer.json tokenizer.
func TestSentencePieceExportRoundTrip(t *testing.T) {
	dir := filepath.Join("..", "testdata", "models", "tinystories-656k")
	orig, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tt := exportTokenizer(t, dir, []int{2})
	if tt.Type != tokenizerTypeSentencePiece || len(tt.Pieces) != orig.VocabSize() {
		t.Fatalf("type %d with %d pieces, want 0 with %d", tt.Type, len(tt.Pieces), orig.VocabSize())
	}
	if len(tt.Stop) != 1 || tt.Stop[0] != 2 || len(tt.Special) != 3 {
		t.Errorf("special %v stop %v", tt.Special, tt.Stop)
	}
	if p := tt.Pieces[0]; p.Type != spUnknown || p.Text != "<unk>" {
		t.Errorf("id 0 = %+v, want the UNKNOWN piece <unk>", p)
	}
	if p := tt.Pieces[3]; p.Text != "\n" || p.Type != spNormal {
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
	dir := filepath.Join("..", "testdata", "models", "qwen3-tokenizer")
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

// pulsar2 build on the SentencePiece TinyStories fixture succeeds end to
// end with the fake compiler, exports a type-0 tokenizer file and the
// output passes verify.
func TestBuildSentencePieceFixture(t *testing.T) {
	useFakeDocker(t, "pulsar2:5.2")
	model := filepath.Join(t.TempDir(), "tinystories-656k")
	src := filepath.Join("..", "testdata", "models", "tinystories-656k")
	if err := os.MkdirAll(model, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(src)
	for _, e := range ents {
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(model, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "ts-ax650")
	var logb bytes.Buffer
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", KVCacheLen: 511, Log: &logb})
	if err != nil {
		t.Fatalf("Build: %v\nlog:\n%s", err, logb.String())
	}
	c, err := VerifyOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.TokenizerType != "LLaMA" || c.URLTokenizerModel != "llama_tokenizer.txt" || c.TokensEmbedNum != 2048 || c.TokensEmbedSize != 128 {
		t.Errorf("config %+v", c)
	}
	if c.Bos == nil || !*c.Bos {
		t.Errorf("bos %v: LLaMA-family models start with BOS", c.Bos)
	}
	f, err := os.Open(filepath.Join(out, c.URLTokenizerModel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tt, err := ReadTokenizerTxt(f, c.URLTokenizerModel)
	if err != nil || tt.Type != tokenizerTypeSentencePiece || len(tt.Pieces) != 2048 {
		t.Fatalf("exported tokenizer: %v (type %v)", err, tt)
	}
	if !fileExists(filepath.Join(out, "tokenizer", "tokenizer.json")) {
		t.Error("tokenizer.json not copied to tokenizer/")
	}
	if res.Tokenizer != "" && res.Tokenizer != c.URLTokenizerModel {
		t.Errorf("result tokenizer %q", res.Tokenizer)
	}
}

// --dry-run never fails on what the real run checks later: it returns the
// command and lists each problem as a warning; the real run stops on them.
func TestBuildDryRunWarnsInsteadOfFailing(t *testing.T) {
	log := useFakeDocker(t, "pulsar2:5.2")
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400, modelType: "gemma3", noTok: true,
		extra: map[string]any{"quantization_config": map[string]any{"quant_method": "gptq", "bits": 4}}})
	out := filepath.Join(t.TempDir(), "o")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	o := BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", Builder: BuilderLLMBuild, DryRun: true}
	res, err := Build(context.Background(), o)
	if err != nil {
		t.Fatalf("dry run failed: %v", err)
	}
	if len(res.Command) == 0 || res.Command[0] != "docker" || len(flagValues(res.Command, "--kv_cache_len")) != 1 {
		t.Errorf("command %q", res.Command)
	}
	all := strings.Join(res.Warnings, "\n")
	for _, want := range []string{"group_size", "--tokenizer-type", "no tokenizer.json", "already exists"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if calls := dockerCalls(t, log); len(calls) > 0 {
		t.Errorf("dry run with --builder ran the runtime: %q", calls)
	}
	o.DryRun = false
	if _, err := Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "group_size") {
		t.Errorf("real run: %v, want the group_size error", err)
	}
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
	if p := tt.Pieces[3+0x0A]; p.Type != spByte || p.Text != "<0x0A>" {
		t.Errorf("id 13 = %+v, want BYTE <0x0A>", p)
	}
	if p := tt.Pieces[264]; p.Type != spNormal || p.Text != " ab" || p.Score != -2 {
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
