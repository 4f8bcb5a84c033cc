package axllm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/axllm"
)

// hubStub lays out what a Hub repository of a compiled model often holds:
// two layer files, the post model, a bf16 embedding of 10 × 4, a tokenizer
// sidecar with the HF config, and a 0-byte config.json.
func hubStub(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"q_p128_l0_together.axmodel": "x", "q_p128_l1_together.axmodel": "x", "q_post.axmodel": "x",
		axllm.EmbedFileName: strings.Repeat("e", 10*4*2), axllm.ConfigName: "",
		filepath.Join("q_tokenizer", "config.json"): `{"model_type": "qwen3", "hidden_size": 4, "max_position_embeddings": 40960}`,
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A directory counts as compiled by its .axmodel files alone, whatever
// its config.json; a Hugging Face checkpoint or an empty one does not.
func TestIsCompiled(t *testing.T) {
	dir := hubStub(t)
	if !axllm.IsCompiled(dir) || !axllm.HasPostModel(dir) {
		t.Fatal("a compiled directory with a stub config is not compiled")
	}
	os.Remove(filepath.Join(dir, "q_post.axmodel"))
	if !axllm.IsCompiled(dir) || axllm.HasPostModel(dir) {
		t.Error("layer files alone: compiled (an unfinished download), but no post model")
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "config.json"), []byte(`{"architectures": ["Qwen3ForCausalLM"]}`), 0o644)
	if axllm.IsCompiled(empty) {
		t.Error("a Hugging Face checkpoint directory counts as compiled")
	}
}

// Describe reads what it can of a broken directory and says why the rest
// is missing; with the config repaired it follows post_config_path as the
// runtime does, an absolute path included.
func TestDescribeStubAndPostConfigPath(t *testing.T) {
	dir := hubStub(t)
	d := axllm.Describe(dir)
	if d.Config != nil || !strings.Contains(d.ConfigErr, "empty") || d.ConfigBytes != 0 {
		t.Errorf("stub config: %+v, %q", d.Config, d.ConfigErr)
	}
	if d.Layout == nil || d.Layout.Layers != 2 || d.Layout.Post != "q_post.axmodel" || d.Layout.Prefill != 128 {
		t.Errorf("layout %+v (%s)", d.Layout, d.LayoutErr)
	}
	if d.EmbedBytes != 80 || d.MaxPositions != 40960 || len(d.Stubs) != 1 || d.Stubs[0] != axllm.ConfigName {
		t.Errorf("embedding %d, max positions %d, stubs %v", d.EmbedBytes, d.MaxPositions, d.Stubs)
	}
	if d.Post != nil || d.Build != nil || d.KVCacheLen != 0 {
		t.Errorf("post %+v build %+v kv %d from files that are not there", d.Post, d.Build, d.KVCacheLen)
	}

	elsewhere := filepath.Join(t.TempDir(), "sampling.json")
	post := axllm.PostConfig{EnableTopKSampling: true, TopK: 7, Temperature: 1, RepetitionPenalty: 1, PenaltyWindow: 20, TopP: 1}
	if err := axllm.WriteJSON(elsewhere, &post); err != nil {
		t.Fatal(err)
	}
	cfg := &axllm.Config{ModelName: "q", TokenizerType: "Qwen3", URLTokenizerModel: "q_tokenizer.txt",
		TemplateFilenameAxmodel: d.Layout.Template, AxmodelNum: 2, FilenamePostAxmodel: d.Layout.Post,
		FilenameTokensEmbed: axllm.EmbedFileName, TokensEmbedNum: 10, TokensEmbedSize: 4, PostConfigPath: elsewhere}
	if err := axllm.WriteJSON(filepath.Join(dir, axllm.ConfigName), cfg); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, axllm.BuildInfoName), []byte(`{"tool": "edgectl pulsar2 build", "kv_cache_len": 1023}`), 0o644)
	d = axllm.Describe(dir)
	if d.Config == nil || d.Post == nil || d.Post.TopK != 7 || d.KVCacheLen != 1023 || d.Build.Tool != "edgectl pulsar2 build" {
		t.Fatalf("repaired: config %+v (%s), post %+v (%s), kv %d", d.Config, d.ConfigErr, d.Post, d.PostErr, d.KVCacheLen)
	}
	if got := axllm.PostConfigFile(dir, d.Config); got != elsewhere {
		t.Errorf("post config file %s, want the absolute %s", got, elsewhere)
	}
	if got := axllm.PostConfigFile(dir, nil); got != filepath.Join(dir, axllm.PostConfigName) {
		t.Errorf("without a config: %s", got)
	}
	// The tokenizer file is still missing: Verify names it, and only it.
	_, err := axllm.Verify(dir)
	ve, ok := err.(*axllm.VerifyError)
	if !ok || len(ve.Problems) != 1 || !strings.Contains(ve.Problems[0], "tokenizer q_tokenizer.txt missing") {
		t.Errorf("verify: %v", err)
	}
}
