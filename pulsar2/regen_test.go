package pulsar2

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/format/axllm"
)

// compiledDir lays out what a Hugging Face repository of a compiled model
// holds: layer and post models, the bf16 embedding, a tokenizer sidecar
// directory with the HF config, and a 0-byte config.json stub.
func compiledDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "qwen3-ax650")
	side := filepath.Join(dir, "qwen3_tokenizer")
	if err := os.MkdirAll(side, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json", "config.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "qwen3-tok", n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(side, n), b, 0o644)
	}
	for i := range 8 { // the fixture config has 8 layers, hidden 768, vocab 6400
		os.WriteFile(filepath.Join(dir, "qwen3_p128_l"+itoa(i)+"_together.axmodel"), []byte("axmodel"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "qwen3_post.axmodel"), []byte("axmodel"), 0o644)
	os.WriteFile(filepath.Join(dir, axllm.EmbedFileName), make([]byte, 6400*768*2), 0o644)
	os.WriteFile(filepath.Join(dir, axllm.ConfigName), nil, 0o644)
	return dir
}

func itoa(i int) string { return string(rune('0' + i)) }

func TestRegenerateConfigFromCompiledDir(t *testing.T) {
	dir := compiledDir(t)
	if _, err := axllm.Verify(dir); err == nil {
		t.Fatal("a 0-byte config verified")
	}
	c, err := RegenerateConfig(dir, RegenOptions{Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.AxmodelNum != 8 || c.TokensEmbedNum != 6400 || c.TokensEmbedSize != 768 || c.TokenizerType != "Qwen3" ||
		c.TemplateFilenameAxmodel != "qwen3_p128_l%d_together.axmodel" || c.ModelName != "qwen3-ax650" {
		t.Fatalf("config %+v", c)
	}
	if st, err := os.Stat(filepath.Join(dir, "config.json.orig")); err != nil || st.Size() != 0 {
		t.Fatal("the stub was not kept as config.json.orig")
	}
	if !axllm.IsTokenizerTxt(filepath.Join(dir, c.URLTokenizerModel)) {
		t.Fatalf("tokenizer %s not written", c.URLTokenizerModel)
	}
	// Idempotent: a valid config is returned as is.
	again, err := RegenerateConfig(dir, RegenOptions{Write: true})
	if err != nil || again.TokensEmbedNum != 6400 {
		t.Fatalf("second run: %v", err)
	}
}

func TestRegenerateConfigRefusesWhatItCannotKnow(t *testing.T) {
	dir := compiledDir(t)
	os.WriteFile(filepath.Join(dir, axllm.EmbedFileName), make([]byte, 768*2*10+2), 0o644)
	if _, err := RegenerateConfig(dir, RegenOptions{}); err == nil {
		t.Fatal("accepted an embedding that is not whole rows")
	}
	dir = compiledDir(t)
	os.RemoveAll(filepath.Join(dir, "qwen3_tokenizer"))
	if _, err := RegenerateConfig(dir, RegenOptions{}); err == nil {
		t.Fatal("accepted a directory with no HF config sidecar")
	}
	dir = compiledDir(t)
	os.Remove(filepath.Join(dir, "qwen3_p128_l7_together.axmodel"))
	if _, err := RegenerateConfig(dir, RegenOptions{}); err == nil {
		t.Fatal("accepted 7 layer files for an 8-layer model")
	}
}
