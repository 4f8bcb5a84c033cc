package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
)

// TestInspectGGUFQuantTypes: a mixed quantized GGUF (Q4_K_M keeps some
// tensors in Q6_K) shows how many tensors each type has, and its
// general.file_type by name in text and as its number in --json.
func TestInspectGGUFQuantTypes(t *testing.T) {
	var b bytes.Buffer
	w := gguf.NewWriter(&b)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Set("general.architecture", "llama"))
	must(w.Set("general.file_type", uint32(15)))
	must(w.AddTensor("output_norm.weight", gguf.TypeF32, 256))
	must(w.AddTensor("blk.0.attn_q.weight", gguf.TypeQ4_K, 256, 2))
	must(w.AddTensor("blk.0.ffn_up.weight", gguf.TypeQ4_K, 256, 2))
	must(w.AddTensor("blk.0.ffn_down.weight", gguf.TypeQ6_K, 256, 2))
	must(w.WriteHeader())
	for _, ti := range w.Tensors() {
		_, err := w.Write(make([]byte, ti.Size))
		must(err)
	}
	must(w.Finish())
	p := filepath.Join(t.TempDir(), "m.gguf")
	must(os.WriteFile(p, b.Bytes(), 0o644))

	code, out, stderr := runCLI(t, "inspect", p)
	if code != 0 || !strings.Contains(out, "dtypes:       F32×1, Q4_K×2, Q6_K×1") || !strings.Contains(out, "general.file_type: 15 (Q4_K_M)") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	code, out, _ = runCLI(t, "inspect", p, "--json")
	var r struct {
		DTypes   map[string]int `json:"dtypes"`
		Metadata map[string]any `json:"metadata"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("exit %d: %s", code, out)
	}
	if r.DTypes["Q4_K"] != 2 || r.DTypes["Q6_K"] != 1 || r.Metadata["general.file_type"] != float64(15) {
		t.Fatalf("--json: %+v", r)
	}
}
