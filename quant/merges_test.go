package quant

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A byte-level BPE vocabulary with no merges (each byte a token) still
// gets tokenizer.ggml.merges, empty: llama.cpp's loader refuses a gpt2
// vocabulary whose GGUF lacks the key.
func TestGGUFWritesEmptyMergesForGPT2(t *testing.T) {
	in := newTiny("bitnet").write(t)
	path := filepath.Join(in, "tokenizer.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	if err := json.Unmarshal(raw, &tok); err != nil {
		t.Fatal(err)
	}
	tok["model"].(map[string]any)["merges"] = []string{}
	writeJSON(t, path, tok)
	out, _ := pack(t, in, FormatTQ2_0, TernarizeAuto)
	w := walkGGUF(t, out)
	if w.str(t, "tokenizer.ggml.model") != "gpt2" {
		t.Fatalf("tokenizer.ggml.model %q, want gpt2", w.str(t, "tokenizer.ggml.model"))
	}
	if _, ok := w.kv["tokenizer.ggml.merges"]; !ok {
		t.Fatal("no tokenizer.ggml.merges key: llama.cpp cannot load a gpt2 vocabulary without it")
	}
	if m := w.strs(t, "tokenizer.ggml.merges"); len(m) != 0 {
		t.Errorf("merges %v, want none", m)
	}
}
