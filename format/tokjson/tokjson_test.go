package tokjson

import (
	"os"
	"path/filepath"
	"testing"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "models", name)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("fixture %s not present", dir)
	}
	return dir
}

func TestLoadSentencePieceStyle(t *testing.T) {
	f, err := Load(fixture(t, "tinystories-656k"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Model.Type != "BPE" || !f.Model.ByteFallback || f.IsByteLevel() {
		t.Fatalf("model %+v byteLevel=%v", f.Model.Type, f.IsByteLevel())
	}
	toks := f.Tokens()
	if len(toks) != 2048 || toks[1] != "<|start_story|>" {
		t.Fatalf("vocab %d, id1=%q", len(toks), toks[1])
	}
	if len(f.Model.Merges) != 1967 || f.Model.Merges[0] != [2]string{"e", "▁"} {
		t.Fatalf("merges %d first %q", len(f.Model.Merges), f.Model.Merges[0])
	}
	c, err := LoadConfig(fixture(t, "tinystories-656k"))
	if err != nil || c.EOSToken != "<|end_story|>" || c.AddBOS == nil || !*c.AddBOS {
		t.Fatalf("config %+v %v", c, err)
	}
}

func TestLoadByteLevelWithPairMerges(t *testing.T) {
	dir := fixture(t, "qwen3-tokenizer")
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !f.IsByteLevel() || len(f.Model.Merges) != 6108 || f.Model.Merges[0] != [2]string{"ï", "¼"} {
		t.Fatalf("byteLevel=%v merges=%d %q", f.IsByteLevel(), len(f.Model.Merges), f.Model.Merges[0])
	}
	if id, ok := f.ID("<|im_end|>"); !ok || id != 2 {
		t.Fatalf("im_end id %d %v", id, ok)
	}
	c, err := LoadConfig(dir)
	if err != nil || c.ChatTemplate == "" {
		t.Fatalf("chat template missing: %v", err)
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	if _, err := Parse([]byte(`{"added_tokens": []}`)); err == nil {
		t.Fatal("accepted a file with no model")
	}
	if _, err := Parse([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}}`)); err == nil {
		t.Fatal("accepted a merge that is not a pair")
	}
}

func TestByteLevelAlphabet(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	s := ByteLevelEncode(all)
	back, ok := ByteLevelDecode(s)
	if !ok || string(back) != string(all) {
		t.Fatal("round trip of all 256 bytes failed")
	}
	// Known spellings: space is Ġ (U+0120), newline Ċ (U+010A), 'a' itself.
	if ByteLevelRune(' ') != 'Ġ' || ByteLevelRune('\n') != 'Ċ' || ByteLevelRune('a') != 'a' {
		t.Fatalf("space %q newline %q", ByteLevelRune(' '), ByteLevelRune('\n'))
	}
	if _, ok := ByteLevelDecode("<|im_end|>✓"); ok {
		t.Fatal("decoded a rune outside the alphabet")
	}
}
