package tokenizer

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/tokjson"
)

// withPreTokenizer writes the TinyStories tokenizer with another
// pre_tokenizer into a temporary directory and loads it.
func withPreTokenizer(t *testing.T, pre any) *Tokenizer {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(tinyStories, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["pre_tokenizer"] = pre
	b, _ = json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return load(t, dir)
}

// A pre-tokenizer regex with catastrophic backtracking, (a+)+$ on
// "aaaa…a!", ran forever; it now fails after the match timeout (1 s) with
// an error naming the file and the pattern and not quoting the input.
func TestHostileRegexTimesOut(t *testing.T) {
	tk := withPreTokenizer(t, map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "(a+)+$"}, "behavior": "Isolated"})
	input := strings.Repeat("a", 5000) + "!"
	start := time.Now()
	ids, err := tk.EncodeContext(context.Background(), input, true)
	took := time.Since(start)
	t.Logf("%v after %v", err, took)
	if !errors.Is(err, ErrRegexTimeout) || ids != nil {
		t.Fatalf("got %d ids, %v", len(ids), err)
	}
	if took > 3*matchTimeout {
		t.Errorf("took %v with a match timeout of %v", took, matchTimeout)
	}
	msg := err.Error()
	for _, w := range []string{"tokenizer.json", "pre_tokenizer Split regex", `"(a+)+$"`, "took longer than 1s", "hostile or broken"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q: %s", w, msg)
		}
	}
	if strings.Contains(msg, "aaaaaaaa") || len(msg) > 400 {
		t.Errorf("the error quotes the input: %s", msg)
	}
	// The same tokenizer still encodes text the pattern handles quickly.
	if ids, err := tk.EncodeContext(context.Background(), "Once upon a time", true); err != nil || len(ids) < 3 {
		t.Errorf("ordinary text: %v %v", ids, err)
	}
}

// Encoding observes its context: a cancelled request stops within
// milliseconds on a megabyte of text, with and without a pre-tokenizer
// regex (TinyStories has none: the whole text is one BPE word).
func TestEncodeStopsWhenCancelled(t *testing.T) {
	text := strings.Repeat("Once upon a time, there was a little girl named Lily. ", 20000) // 1.1 MB
	for _, dir := range []string{qwen3, tinyStories} {
		tk := load(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := tk.EncodeContext(ctx, text, true); !errors.Is(err, context.Canceled) {
			t.Errorf("%s, cancelled before: %v", filepath.Base(dir), err)
		}
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		_, err := tk.EncodeContext(ctx, text, true)
		took := time.Since(start)
		t.Logf("%s: %v after %v", filepath.Base(dir), err, took)
		if took > 500*time.Millisecond {
			t.Errorf("%s: returned %v after the cancel", filepath.Base(dir), took-20*time.Millisecond)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v", filepath.Base(dir), err)
		}
	}
}

// Added tokens are found in one pass per token: a long conversation full
// of special tokens encodes in linear time (each occurrence used to search
// the rest of the text again for every added token: about 10^11 byte
// comparisons here).
func TestManyAddedTokensEncodeInLinearTime(t *testing.T) {
	tk := load(t, qwen3)
	one := tk.Encode("<|im_start|>user\nhi<|im_end|>\n", false)
	const n = 40000
	text := strings.Repeat("<|im_start|>user\nhi<|im_end|>\n", n)
	start := time.Now()
	ids, err := tk.EncodeContext(context.Background(), text, false)
	took := time.Since(start)
	t.Logf("%d bytes, %d ids in %v", len(text), len(ids), took)
	if err != nil || len(ids) != n*len(one) {
		t.Fatalf("%d ids (want %d), %v", len(ids), n*len(one), err)
	}
	for i := 0; i < len(ids); i += len(one) {
		if ids[i] != one[0] || ids[i+len(one)-2] != one[len(one)-2] {
			t.Fatalf("ids[%d:] = %v, want %v", i, ids[i:i+len(one)], one)
		}
	}
	if took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

// Ids are checked before the id tables are sized from them.
func TestNewRefusesHostileIDs(t *testing.T) {
	base := func() *tokjson.File {
		return &tokjson.File{Model: tokjson.Model{Type: "BPE", Vocab: map[string]int{"a": 0, "b": 1, "ab": 2}, Merges: [][2]string{{"a", "b"}}}}
	}
	for _, c := range []struct {
		name string
		edit func(f *tokjson.File)
		want string
	}{
		{"vocab id 10^9", func(f *tokjson.File) { f.Model.Vocab["x"] = 1e9 }, `model.vocab id 1000000000 ("x")`},
		{"negative vocab id", func(f *tokjson.File) { f.Model.Vocab["x"] = -3 }, "id -3"},
		{"added id 10^9", func(f *tokjson.File) { f.AddedTokens = []tokjson.AddedToken{{ID: 1e9, Content: "<evil>"}} }, `added_tokens id 1000000000 ("<evil>")`},
		{"empty vocab", func(f *tokjson.File) { f.Model.Vocab = nil }, "model.vocab is empty"},
	} {
		f := base()
		c.edit(f)
		_, err := New(f, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := New(base(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := FromGGUF(GGUFVocab{Model: "gpt2", Merges: []string{"a b"}, BOS: -1, EOS: -1, Unk: -1}); err == nil || !strings.Contains(err.Error(), "tokenizer.ggml.tokens holds 0 tokens") {
		t.Errorf("GGUF without tokens: %v", err)
	}
}

// A whole prompt that is one BPE word (no pre-tokenizer) is not kept in
// the word cache: each request would leave its prompt in memory.
func TestLongWordsAreNotCached(t *testing.T) {
	tk := load(t, tinyStories)
	long := strings.Repeat("the cat sat ", 100)
	a := tk.Encode(long, false)
	b := tk.Encode(long, false)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d and %d ids", len(a), len(b))
	}
	tk.cacheMu.Lock()
	defer tk.cacheMu.Unlock()
	for w := range tk.cache {
		if len(w) > maxCachedWord {
			t.Fatalf("cached a %d-byte word", len(w))
		}
	}
}

// refBPE is GPT-2's merge loop written plainly (find the best pair, merge
// all its occurrences, repeat): bpe must give the same symbols.
func refBPE(t *Tokenizer, w string) []string {
	var syms []string
	for _, r := range w {
		syms = append(syms, string(r))
	}
	for len(syms) > 1 {
		best, bi := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := t.ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		a, b := syms[bi], syms[bi+1]
		var out []string
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
				out = append(out, a+b)
				i++
			} else {
				out = append(out, syms[i])
			}
		}
		syms = out
	}
	return syms
}

func TestBPEMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("aaaeeeiioouu tttnnsrrlldh.,!?'\n▁ééü你好🙂0123")
	for _, dir := range []string{tinyStories, qwen3} {
		tk := load(t, dir)
		for n := range 400 {
			rs := make([]rune, 1+rng.IntN(1+n))
			for i := range rs {
				rs[i] = alphabet[rng.IntN(len(alphabet))]
			}
			w := string(rs)
			if tk.byteLevel {
				var b strings.Builder
				for i := 0; i < len(w); i++ {
					b.WriteRune(byteToUnicode[w[i]])
				}
				w = b.String()
			}
			got, err := tk.merge(context.Background(), w)
			if err != nil {
				t.Fatal(err)
			}
			if want := refBPE(tk, w); !slices.Equal(got, want) {
				t.Fatalf("%s: merge(%q) = %q, reference %q", filepath.Base(dir), w, got, want)
			}
		}
	}
}
