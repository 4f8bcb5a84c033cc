package grammar

import (
	"runtime"
	"testing"
	"time"
)

// fakeTok is a three-token vocabulary with one special token.
type fakeTok struct{ pieces []string }

func (f *fakeTok) VocabSize() int        { return len(f.pieces) }
func (f *fakeTok) Piece(id int) []byte   { return []byte(f.pieces[id]) }
func (f *fakeTok) IsSpecial(id int) bool { return f.pieces[id] == "</s>" }

// One trie per tokenizer, built once, shared by its sessions, and dropped
// with the tokenizer (no cache outlives an unloaded model).
func TestVocabOfIsCachedPerTokenizer(t *testing.T) {
	a, b := &fakeTok{[]string{"{", "}", "</s>"}}, &fakeTok{[]string{"{", "}", "</s>", `"`}}
	va := VocabOf(a)
	if VocabOf(a) != va || VocabOf(b) == va || va.Size() != 3 || VocabOf(b).Size() != 4 {
		t.Fatal("VocabOf does not cache per tokenizer")
	}
	if va.Nodes() != 3 { // root, '{', '}': the special token is not in the trie
		t.Errorf("%d trie nodes, want 3", va.Nodes())
	}
	a, b = nil, nil
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		vocabs.Lock()
		n := len(vocabs.m)
		vocabs.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d cached vocabularies outlive their tokenizers", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
