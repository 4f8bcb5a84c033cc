package cpu

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// spmGGUF is TinyStories as F32 GGUF with a SentencePiece vocabulary in
// llama.cpp's score form (no merges), with what llama.cpp made of it; it
// lives outside the repository (../shared), so the test skips without it.
var spmGGUF = filepath.Join("../../../shared/fixtures/gguf-quants", "tinystories-spm-f32.gguf")

// The engine loads a score-form SentencePiece GGUF (it refused "a llama
// vocabulary without merges"), tokenizes the prompt as llama.cpp did, and
// its greedy text agrees with llama-cli's.
func TestSPMGGUFTokenizesAndGeneratesAsLlamaCpp(t *testing.T) {
	f, err := os.Open(filepath.Join(filepath.Dir(spmGGUF), "expected.jsonl"))
	if err != nil {
		t.Skipf("llama.cpp fixtures absent (../shared): %v", err)
	}
	defer f.Close()
	m := loadModel(t, spmGGUF)
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			File, Prompt string
			Text         string `json:"llamacpp_text"`
			IDs          []int  `json:"llamacpp_prompt_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.File != filepath.Base(spmGGUF) {
			continue
		}
		n++
		if got := m.tok.Encode(e.Prompt, true); !slices.Equal(got, e.IDs) {
			t.Errorf("Encode(%q) = %v, llama.cpp %v", e.Prompt, got, e.IDs)
		}
		out, _ := generate(t, m, engine.Request{Prompt: e.Prompt, MaxTokens: 60, Sampling: greedy()})
		same := 0
		for same < min(len(out), len(e.Text)) && out[same] == e.Text[same] {
			same++
		}
		t.Logf("%q: %d of llama.cpp's %d characters agree\nengine:    %q\nllama.cpp: %q", e.Prompt, same, len(e.Text), out, e.Text)
		if same < 40 {
			t.Errorf("%q: greedy text parts from llama.cpp's after %d characters", e.Prompt, same)
		}
	}
	if n == 0 {
		t.Fatalf("expected.jsonl has no line for %s", filepath.Base(spmGGUF))
	}
}
