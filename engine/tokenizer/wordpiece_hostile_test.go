package tokenizer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Request text meant to be slow or large: one huge word, a million short
// words, CJK (three bytes and two spaces each), punctuation, special
// tokens, control characters. Work is linear in the text (a word costs at
// most its length times the longest token's), so each megabyte takes well
// under a second; the bound below allows for a loaded 2-core machine.
func TestWordPieceHostileText(t *testing.T) {
	tok := loadBert(t, "uncased")
	const mb = 1 << 20
	for name, text := range map[string]string{
		"one word":    strings.Repeat("a", mb),
		"short words": strings.Repeat("a ", mb/2),
		"long words":  strings.Repeat(strings.Repeat("a", 100)+" ", mb/101),
		"cjk":         strings.Repeat("中", mb/3),
		"punctuation": strings.Repeat("!?", mb/2),
		"specials":    strings.Repeat("[MASK]x", mb/7),
		"controls":    strings.Repeat("\x01\u200b", mb/4),
		"accents":     strings.Repeat("e\u0301", mb/3),
	} {
		start := time.Now()
		ids, err := tok.EncodeContext(context.Background(), text, true)
		took := time.Since(start)
		t.Logf("%s: %d bytes → %d ids in %v", name, len(text), len(ids), took)
		if err != nil || len(ids) < 2 || len(ids) > len(text)+2 {
			t.Errorf("%s: %d ids, %v", name, len(ids), err)
		}
		if took > 10*time.Second {
			t.Errorf("%s took %v", name, took)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tok.EncodeContext(ctx, strings.Repeat("a ", 10000), true); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// A vocabulary built against the matcher — "a" and a 999-byte near-miss
// "aaa…ab" — with the largest word length the engine accepts: every
// position of a 1000-character word walks 999 bytes and advances one.
// The work per byte of text is bounded by the word length cap.
func TestWordPieceHostileVocab(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a", 998) + "b"
	doc := `{"added_tokens":[],"normalizer":null,"pre_tokenizer":{"type":"WhitespaceSplit"},"post_processor":null,"decoder":null,` +
		`"model":{"type":"WordPiece","unk_token":"[UNK]","max_input_chars_per_word":1000,"vocab":{"[UNK]":0,"a":1,"##a":2,"` + long + `":3,"##` + long + `":4}}}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat(strings.Repeat("a", 1000)+" ", 100) // 100 KB
	start := time.Now()
	ids := tok.Encode(text, true)
	took := time.Since(start)
	t.Logf("%d bytes → %d ids in %v", len(text), len(ids), took)
	if len(ids) != 100*1000 || ids[0] != 1 || ids[1] != 2 {
		t.Errorf("%d ids, first %v", len(ids), ids[:2])
	}
	if took > 20*time.Second {
		t.Errorf("took %v", took)
	}
}

// Any text, valid UTF-8 or not: no panic, every id in the vocabulary, the
// template around it, and the same ids again.
func FuzzWordPieceEncode(f *testing.F) {
	for _, s := range wordPieceCorpus {
		f.Add(s)
	}
	f.Add("\xff\xfe[MASK\xc3")
	tok, err := Load(writeBertTokenizer(f, bertVariants[0]))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s, true)
		if len(ids) < 2 || ids[0] != 2 || ids[len(ids)-1] != 3 {
			t.Fatalf("%q: %v", s, ids)
		}
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("%q: id %d", s, id)
			}
		}
		if again := tok.Encode(s, true); !slices.Equal(again, ids) {
			t.Fatalf("%q: %v then %v", s, ids, again)
		}
		_ = tok.Decode(ids)
	})
}
