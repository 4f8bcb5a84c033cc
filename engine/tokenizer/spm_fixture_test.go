package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
)

// spmFixtures holds GGUF files made by llama.cpp's own tools and what
// llama.cpp did with them (its README says how); it lives outside the
// repository, so the tests that read it skip where it is absent.
const spmFixtures = "../../../shared/fixtures/gguf-quants"

// loadSPMFixture builds the tokenizer of tinystories-spm-f32.gguf, a
// SentencePiece vocabulary in llama.cpp's score form (no merges).
func loadSPMFixture(t testing.TB) *Tokenizer {
	t.Helper()
	path := filepath.Join(spmFixtures, "tinystories-spm-f32.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is absent (../shared holds the llama.cpp fixtures): %v", path, err)
	}
	g, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	v, ok, err := ReadGGUFVocab(g)
	if err != nil || !ok {
		t.Fatalf("%s: vocabulary %v, %v", path, ok, err)
	}
	if v.Model != "llama" || len(v.Merges) != 0 || len(v.Scores) != len(v.Tokens) {
		t.Fatalf("%s is not score-form SentencePiece: model %q, %d merges, %d scores", path, v.Model, len(v.Merges), len(v.Scores))
	}
	tk, err := FromGGUF(v)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// expectedLine is one line of the fixtures' expected.jsonl.
type expectedLine struct {
	File        string `json:"file"`
	Prompt      string `json:"prompt"`
	LlamaCppIDs []int  `json:"llamacpp_prompt_ids"`
}

func readExpected(t testing.TB) []expectedLine {
	t.Helper()
	f, err := os.Open(filepath.Join(spmFixtures, "expected.jsonl"))
	if err != nil {
		t.Skipf("fixtures absent: %v", err)
	}
	defer f.Close()
	var out []expectedLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e expectedLine
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("expected.jsonl: %v", err)
		}
		out = append(out, e)
	}
	return out
}

// The SentencePiece fixture tokenizes every prompt exactly as llama.cpp did.
func TestSPMFixtureMatchesLlamaCpp(t *testing.T) {
	tk := loadSPMFixture(t)
	n := 0
	for _, e := range readExpected(t) {
		if e.LlamaCppIDs == nil {
			continue
		}
		n++
		if got := tk.Encode(e.Prompt, true); !slices.Equal(got, e.LlamaCppIDs) {
			t.Errorf("%s: Encode(%q) = %v, llama.cpp %v", e.File, e.Prompt, got, e.LlamaCppIDs)
		}
	}
	if n == 0 {
		t.Fatal("expected.jsonl has no llamacpp_prompt_ids")
	}
}
