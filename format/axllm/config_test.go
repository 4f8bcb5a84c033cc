package axllm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/axllm"
)

func TestReadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, has string }{
		{"", "empty"},
		{`{"architectures": ["Qwen3ForCausalLM"], "hidden_size": 8}`, "Hugging Face config.json"},
		{`{"model_name": "m", "tokenizer_type": "Qwen3"}`, "Key not found: url_tokenizer_model"},
		{`{"model_name": "m", "tokenizer_type": "Qwen3", "url_tokenizer_model": "t.txt", "template_filename_axmodel": "x_l0.axmodel",
		   "axmodel_num": 2, "filename_post_axmodel": "p", "filename_tokens_embed": "e", "tokens_embed_num": 1, "tokens_embed_size": 1}`, "%d"},
		{`{"model_name": "m", "tokenizer_type": "Qwen3", "url_tokenizer_model": "t.txt", "template_filename_axmodel": "x_l%d.axmodel",
		   "axmodel_num": "2", "filename_post_axmodel": "p", "filename_tokens_embed": "e", "tokens_embed_num": 1, "tokens_embed_size": 1}`, `"axmodel_num" holds string`},
	} {
		p := filepath.Join(dir, "config.json")
		os.WriteFile(p, []byte(c.body), 0o644)
		if _, err := axllm.ReadConfig(dir); err == nil || !strings.Contains(err.Error(), c.has) {
			t.Errorf("%.40q: err %v, want %q", c.body, err, c.has)
		}
	}
	os.WriteFile(filepath.Join(dir, "post_config.json"), []byte(`{"enable_temperature": true, "temperature": 0.1}`), 0o644)
	if _, err := axllm.ReadPostConfig(filepath.Join(dir, "post_config.json")); err == nil || !strings.Contains(err.Error(), "top_k") {
		t.Errorf("incomplete post_config accepted: %v", err)
	}
}

// Verify catches what axllm would trip on.
func TestVerifyFindsProblems(t *testing.T) {
	dir := t.TempDir()
	cfg := &axllm.Config{ModelName: "m", TokenizerType: "Qwen3", URLTokenizerModel: "qwen3_tokenizer.txt",
		TemplateFilenameAxmodel: "qwen3_p128_l%d_together.axmodel", AxmodelNum: 2, FilenamePostAxmodel: "qwen3_post.axmodel",
		FilenameTokensEmbed: axllm.EmbedFileName, TokensEmbedNum: 10, TokensEmbedSize: 4,
		Extra: map[string]json.RawMessage{"kv_cache_slots": json.RawMessage("2")}}
	if err := axllm.WriteJSON(filepath.Join(dir, axllm.ConfigName), cfg); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"qwen3_p128_l0_together.axmodel", "qwen3_p128_l1_together.axmodel", "qwen3_p128_l2_together.axmodel", "qwen3_tokenizer.txt"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, axllm.EmbedFileName), make([]byte, 79), 0o644)
	_, err := axllm.Verify(dir)
	ve, ok := err.(*axllm.VerifyError)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	joined := strings.Join(ve.Problems, "\n")
	for _, want := range []string{"l2_together.axmodel exists but axmodel_num is 2", "post model qwen3_post.axmodel missing", "79 bytes, want", "post config post_config.json missing"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems lack %q:\n%s", want, joined)
		}
	}
	// Extra keys survive a round trip.
	back, err := axllm.ReadConfig(dir)
	if err != nil || string(back.Extra["kv_cache_slots"]) != "2" {
		t.Errorf("extra keys lost: %v %v", back, err)
	}
}

func TestDiscoverLayoutRejectsGaps(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"q_p128_l0_together.axmodel", "q_p128_l2_together.axmodel", "q_post.axmodel"} {
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	if _, err := axllm.DiscoverLayout(dir); err == nil || !strings.Contains(err.Error(), "gap") {
		t.Errorf("gap not reported: %v", err)
	}
}
