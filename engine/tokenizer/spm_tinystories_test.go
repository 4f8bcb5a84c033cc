package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/tokjson"
)

// tinyStoriesSPM lays TinyStories' tokenizer.json out as llama.cpp's
// converter writes a SentencePiece vocabulary without merges: the tokens
// in id order, score −id for normal pieces (earlier pieces were learned
// first) and 0 for the rest, unknown and control types.
func tinyStoriesSPM(t testing.TB) GGUFVocab {
	t.Helper()
	f, err := tokjson.Load(tinyStories)
	if err != nil {
		t.Fatal(err)
	}
	v := GGUFVocab{Model: "llama", Pre: "default", Tokens: f.Tokens(), BOS: 1, EOS: 2, Unk: 0}
	special := map[int]bool{}
	for _, a := range f.AddedTokens {
		special[a.ID] = a.Special
	}
	for id, s := range v.Tokens {
		typ, score := int32(typeNormal), -float32(id)
		switch {
		case f.Model.UnkToken != nil && s == *f.Model.UnkToken:
			typ, score = typeUnknown, 0
		case special[id]:
			typ, score = typeControl, 0
		}
		v.Types, v.Scores = append(v.Types, typ), append(v.Scores, score)
	}
	return v
}

// storyText is random text over TinyStories' words, with single, double
// and no spaces and newlines between them.
func storyText(rng *rand.Rand, words int) string {
	vocab := strings.Fields(`Once upon a time there was a little girl named Lily She loved to play with her toys
		and read her favorite book One day she found a big round shiny red ball in the park It was happy sad Tom
		Spot dog cat bird tree sky sun 123 42 , . ! ? " ' - : ; unbelievable extraordinary xylophone zzz Mississippi`)
	seps := []string{" ", " ", " ", "  ", "\n", ""}
	var b strings.Builder
	for j := range words {
		if j > 0 {
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		b.WriteString(vocab[rng.IntN(len(vocab))])
	}
	return b.String()
}

// The same vocabulary, tokenized two independent ways, agrees: the SPM
// pass (merge by score with a priority queue) and tokenizer.json's BPE
// (merge by rank, round by round; its ids are checked against an
// independent Python BPE in TestKnownIDs). The two rules are not the same
// in general, but TinyStories' pieces were learned in id order, which is
// what the scores say, and on 3000 random stories they give the same ids.
func TestSPMAgreesWithBPEOnTinyStories(t *testing.T) {
	v := tinyStoriesSPM(t)
	spm, bpe := newSPM(t, v), load(t, tinyStories)
	rng := rand.New(rand.NewPCG(20, 1))
	for range 3000 {
		text := storyText(rng, 1+rng.IntN(16))
		for _, special := range []bool{true, false} {
			if a, b := spm.Encode(text, special), bpe.Encode(text, special); !slices.Equal(a, b) {
				t.Fatalf("%q (specials %v): SPM %v, BPE %v", text, special, a, b)
			}
		}
		if got := spm.Decode(spm.Encode(text, false)); got != text {
			t.Fatalf("Decode(Encode(%q)) = %q", text, got)
		}
	}
}

// tinystories-spm-f32.gguf (made by llama.cpp's converter) holds the
// vocabulary tinyStoriesSPM lays out, so the agreement above is
// llama.cpp's vocabulary too.
func TestSPMFixtureVocabularyIsTinyStories(t *testing.T) {
	fixture := loadSPMFixture(t)
	ours := newSPM(t, tinyStoriesSPM(t))
	if !slices.Equal(fixture.spm.scores, ours.spm.scores) || fixture.spm.addSpacePrefix != ours.spm.addSpacePrefix ||
		fixture.bos != ours.bos || !slices.Equal(fixture.eos, ours.eos) || fixture.unk != ours.unk || fixture.addBOS != ours.addBOS {
		t.Fatal("the fixture's scores or special ids differ from tokenizer.json laid out as llama.cpp does")
	}
	if len(fixture.vocab) != len(ours.vocab) || !slices.EqualFunc(fixture.pieces, ours.pieces, func(a, b []byte) bool { return string(a) == string(b) }) ||
		!slices.Equal(fixture.special, ours.special) {
		t.Fatal("the fixture's tokens or types differ from tokenizer.json's")
	}
	for s, id := range ours.vocab {
		if fixture.vocab[s] != id {
			t.Fatalf("token %q: fixture id %d, tokenizer.json %d", s, fixture.vocab[s], id)
		}
	}
}
