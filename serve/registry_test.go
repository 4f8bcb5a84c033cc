package serve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/engine/upstream"
)

func TestRegistryFindsEveryFormat(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "TinyStories 656K")
	axDir(t, root, "qwen3-ax650", `{}`, 1)
	write := func(p string, b []byte) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bitnet.gguf", []byte("GGUF"))
	write("nested/phi.h1b", []byte("H1B"))
	write("notes/readme.txt", []byte("x"))
	// An axmodel directory whose config.json is the Hugging Face one is not
	// runnable by axllm: not listed (and not mistaken for a checkpoint).
	write("broken-ax/m_post.axmodel", []byte("x"))
	write("broken-ax/config.json", []byte(`{"architectures":["Qwen3ForCausalLM"]}`))

	r := NewRegistry([]string{root}, []upstream.Config{{Name: "FLM-Llama", URL: "http://127.0.0.1:1"}})
	want := map[string]string{
		"tinystories-656k:latest": LaneCPU, "qwen3-ax650:latest": LaneAxcl, "bitnet:latest": LaneCPU,
		"phi:latest": LaneCPU, "flm-llama:latest": "upstream:FLM-Llama",
	}
	got := map[string]string{}
	for _, e := range r.List() {
		got[e.Name] = e.Lane
	}
	if len(got) != len(want) {
		t.Errorf("found %v, want %v", got, want)
	}
	for n, l := range want {
		if got[n] != l {
			t.Errorf("%s: lane %q, want %q", n, got[n], l)
		}
	}
	e, ok := r.Lookup("TinyStories-656K")
	if !ok || e.Details.Format != "safetensors" || e.Details.Family != "llama" || e.Details.QuantizationLevel != "F32" || e.ContextLength != 512 || e.Size != 2626168 {
		t.Errorf("tinystories entry %+v", e)
	}
	// Models copied in while serving are found on lookup.
	write("late.gguf", []byte("GGUF"))
	if _, ok := r.Lookup("late"); !ok {
		t.Error("late model not found after rescan")
	}
}
