package tokenizer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// runVocab has "a" and every run of it up to maxLen bytes, longer runs
// scoring higher: a run of "a" then grows one character at a time, the
// most lookups and the longest ones a text of one character can cause.
func runVocab(maxLen int) GGUFVocab {
	var pieces []piece
	for k := 1; k <= maxLen; k++ {
		pieces = append(pieces, piece{strings.Repeat("a", k), float32(k), 0})
	}
	return spmVocab(spmOpts{addSpacePrefix: off}, pieces...)
}

// The stated bound: for n characters, at most n−1 + 2·(merges) ≤ 3n
// lookups, each hashing at most L bytes (L, the longest piece: a longer
// pair is never looked up), as many queue pushes and pops, each O(log n);
// memory 16 bytes per character plus 16 per queued pair. So a long run of
// one character costs O(n·(log n + L)), not n². The counts are exact, so
// this holds on any machine; the time is logged and only checked loosely.
func TestSPMLongRunIsNotQuadratic(t *testing.T) {
	const maxLen = 64
	tk := newSPM(t, runVocab(maxLen))
	for _, n := range []int{1 << 14, 1 << 20} {
		s := &spmSession{t: tk, text: strings.Repeat("a", n)}
		start := time.Now()
		ids, err := s.encode(context.Background(), nil)
		took := time.Since(start)
		st := s.stats
		t.Logf("%d × a: %d ids, %+v, %v", n, len(ids), st, took)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != n/maxLen || tk.Decode(ids) != s.text {
			t.Fatalf("%d ids, want %d pieces of %d", len(ids), n/maxLen, maxLen)
		}
		if st.symbols != n || st.lookups > 3*n || st.pushes > st.lookups || st.pops != st.pushes || st.lookedUpBytes > st.lookups*maxLen {
			t.Errorf("work beyond the bound: %+v for n = %d, L = %d", st, n, maxLen)
		}
		if took > 20*time.Second {
			t.Errorf("%d characters took %v", n, took)
		}
	}
}

// Encoding a megabyte stops soon after its context is cancelled.
func TestSPMEncodeStopsWhenCancelled(t *testing.T) {
	tk := newSPM(t, runVocab(64))
	text := strings.Repeat("a", 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tk.EncodeContext(ctx, text, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	start := time.Now()
	_, err := tk.EncodeContext(ctx, text, true)
	t.Logf("%v after %v", err, time.Since(start))
	if err != nil && !errors.Is(err, context.Canceled) || time.Since(start) > 500*time.Millisecond {
		t.Errorf("%v after %v", err, time.Since(start))
	}
}

// fuzzVocab has byte tokens, pieces with ties, multi-byte characters and
// ▁, and a user-defined token.
func fuzzVocab() GGUFVocab {
	return spmVocab(spmOpts{},
		piece{"▁", -1, 0}, piece{"a", -1, 0}, piece{"b", -1, 0}, piece{"é", -1, 0}, piece{"€", -2, 0},
		piece{"▁a", -2, 0}, piece{"ab", -2, 0}, piece{"ba", -2, 0}, piece{"aa", -3, 0}, piece{"▁▁", -3, 0},
		piece{"▁é", -4, 0}, piece{"aba", -4, 0}, piece{"▁ab", -5, 0}, piece{"<u>", 0, typeUserDefined})
}

// Any input encodes to ids of the vocabulary, at most a few per byte;
// valid UTF-8 decodes back to itself unless it holds an added token's
// text or ▁, which the encoder reads as markup and as a space. (Invalid
// UTF-8 need not: a stray lead byte swallows the ▁ after it into its
// byte tokens, as in llama.cpp.) `go test -fuzz FuzzSPM` explores further.
func FuzzSPM(f *testing.F) {
	for _, s := range []string{"", "a", " a  b ", "aé€🙂", "\xff\xe2a", "0\xf2 00", "<u>a", "abababa", strings.Repeat(" ", 40), "a\tb\nc"} {
		f.Add(s)
	}
	v := fuzzVocab()
	tk, err := FromGGUF(v)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := tk.EncodeContext(context.Background(), s, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 2*len(s)+1 {
			t.Fatalf("%q: %d ids for %d bytes", s, len(ids), len(s))
		}
		for _, id := range ids {
			if id < 0 || id >= len(v.Tokens) {
				t.Fatalf("%q: id %d outside the vocabulary", s, id)
			}
		}
		if strings.Contains(s, "▁") || strings.Contains(s, "<u>") || strings.Contains(s, "<s>") || strings.Contains(s, "</s>") || strings.Contains(s, "<unk>") {
			return
		}
		if got := tk.Decode(ids); utf8.ValidString(s) && got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
	})
}
