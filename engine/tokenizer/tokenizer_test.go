package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/tokjson"
)

const (
	tinyStories = "../../testdata/models/tinystories-656k"
	qwen3       = "../../testdata/models/qwen3-tokenizer"
)

func load(t testing.TB, dir string) *Tokenizer {
	t.Helper()
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// Known ids come from testdata/bpe_ref.py, an independent Python BPE.
func TestKnownIDs(t *testing.T) {
	cases := []struct {
		dir, text string
		special   bool
		want      []int
	}{
		{tinyStories, "Once upon a time", true, []int{1, 80, 147, 201, 282, 57}},
		{tinyStories, "The little dog was happy.", true, []int{1, 80, 247, 229, 401, 1907, 10}},
		{qwen3, "Hello world!", true, []int{1602, 1707, 36}},
		{qwen3, "The quick brown fox", true, []int{750, 5658, 363, 2079, 113, 341, 2979}},
		{qwen3, "naïve café", true, []int{113, 100, 163, 143, 478, 317, 4249, 3006}},
	}
	for _, c := range cases {
		tk := load(t, c.dir)
		if got := tk.Encode(c.text, c.special); !slices.Equal(got, c.want) {
			t.Errorf("%s: Encode(%q) = %v, want %v", filepath.Base(c.dir), c.text, got, c.want)
		}
	}
}

func TestRoundTrips(t *testing.T) {
	texts := []string{
		"Once upon a time, there was a little girl named Lily.",
		"  leading spaces and\ttabs\nand newlines\n\n",
		"unicode: héllo wörld — 你好 🙂 ∑ ñ",
		"numbers 12345 and symbols #@$%^&*()",
	}
	q := load(t, qwen3)
	for _, s := range texts {
		if got := q.Decode(q.Encode(s, false)); got != s {
			t.Errorf("qwen3 round trip: %q → %q", s, got)
		}
	}
	// TinyStories' vocabulary has no byte tokens, so only text it can
	// spell round-trips; the SentencePiece leading ▁ must not add a space.
	ts := load(t, tinyStories)
	for _, s := range []string{"Once upon a time, there was a little girl named Lily.", "He said: \"Hello!\" and ran."} {
		ids := ts.Encode(s, true)
		if ids[0] != 1 {
			t.Errorf("no BOS: %v", ids)
		}
		if got := ts.Decode(ids); got != s {
			t.Errorf("tinystories round trip: %q → %q", s, got)
		}
	}
}

func TestAddedTokens(t *testing.T) {
	q := load(t, qwen3)
	ids := q.Encode("<|im_start|>user\nHello world!<|im_end|>\n", false)
	if ids[0] != 1 || !slices.Contains(ids, 2) {
		t.Fatalf("special tokens not recognized: %v", ids)
	}
	// The text between special tokens is encoded on its own.
	mid := q.Encode("Hello world!", false)
	if i := slices.Index(ids, 1602); i < 0 || !slices.Equal(ids[i:i+len(mid)], mid) {
		t.Errorf("%v does not contain %v", ids, mid)
	}
	if got := q.Decode(ids); got != "user\nHello world!\n" {
		t.Errorf("Decode skips specials: got %q", got)
	}
	if string(q.Piece(1)) != "<|im_start|>" || !q.IsSpecial(1) {
		t.Errorf("piece of 1: %q", q.Piece(1))
	}
	ts := load(t, tinyStories)
	if ids := ts.Encode("<|start_story|>Once", false); ids[0] != 1 {
		t.Errorf("tinystories <|start_story|>: %v", ids)
	}
	if ts.BOS() != 1 || !slices.Equal(ts.EOS(), []int{2}) {
		t.Errorf("bos %d eos %v", ts.BOS(), ts.EOS())
	}
}

// TestByteFallback builds a small SentencePiece-style tokenizer.json with
// <0xXX> tokens (as Llama 2 ships) and checks characters outside the
// vocabulary become their UTF-8 bytes and decode back.
func TestByteFallback(t *testing.T) {
	fixed := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2, "▁": 3, "h": 4, "i": 5, "▁h": 6, "▁hi": 7}
	for b := range 256 {
		fixed[fmt.Sprintf("<0x%02X>", b)] = 8 + b
	}
	doc := map[string]any{
		"added_tokens": []map[string]any{{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true}},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}}},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0}}},
		"model": map[string]any{"type": "BPE", "vocab": fixed, "merges": []string{"▁ h", "▁h i"}, "byte_fallback": true, "unk_token": "<unk>"},
	}
	b, _ := json.Marshal(doc)
	f, err := tokjson.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := New(f, &tokjson.Config{BOSToken: "<s>", EOSToken: "</s>"})
	if err != nil {
		t.Fatal(err)
	}
	ids := tk.Encode("hi é", false)
	// ▁hi, ▁, then é as its two UTF-8 bytes C3 A9.
	want := []int{7, 3, 8 + 0xC3, 8 + 0xA9}
	if !slices.Equal(ids, want) {
		t.Fatalf("Encode = %v, want %v", ids, want)
	}
	if got := tk.Decode(ids); got != "hi é" {
		t.Fatalf("Decode = %q", got)
	}
}

func TestFromHTokMatchesTokenizerJSON(t *testing.T) {
	// An .htok carries the byte-level vocabulary and merges as ids; on
	// plain text it must tokenize as the tokenizer.json it came from.
	f, err := tokjson.Load(qwen3)
	if err != nil {
		t.Fatal(err)
	}
	toks := f.Tokens()
	id := func(s string) uint32 { return uint32(f.Model.Vocab[s]) }
	var merges [][3]uint32
	for _, m := range f.Model.Merges {
		merges = append(merges, [3]uint32{id(m[0]), id(m[1]), id(m[0] + m[1])})
	}
	h := FromHTok(toks, merges, 1, 2)
	ref := load(t, qwen3)
	for _, s := range []string{"Hello world!", "The quick brown fox jumps over the lazy dog.", "naïve café"} {
		if a, b := h.Encode(s, false), ref.Encode(s, false); !slices.Equal(a, b) {
			t.Errorf("%q: htok %v, tokenizer.json %v", s, a, b)
		}
		if got := h.Decode(h.Encode(s, false)); got != s {
			t.Errorf("htok round trip %q → %q", s, got)
		}
	}
}

func TestUnsupportedModelIsAnError(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(qwen3, "tokenizer.json"))
	var doc map[string]any
	json.Unmarshal(b, &doc)
	doc["model"].(map[string]any)["type"] = "WordPiece"
	b, _ = json.Marshal(doc)
	f, err := tokjson.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(f, nil); err == nil || !strings.Contains(err.Error(), "WordPiece") {
		t.Fatalf("err = %v", err)
	}
}
