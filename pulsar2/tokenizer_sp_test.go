package pulsar2

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/testbin"
)

// pulsar2 build on the SentencePiece TinyStories fixture succeeds end to
// end with the fake compiler, exports a type-0 tokenizer file and the
// output passes verify.
func TestBuildSentencePieceFixture(t *testing.T) {
	useFakeDocker(t, "pulsar2:5.2")
	model := filepath.Join(t.TempDir(), "tinystories-656k")
	src := filepath.Join("..", "testdata", "models", "tinystories-656k")
	if err := os.MkdirAll(model, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(src)
	for _, e := range ents {
		if err := atomicfile.Copy(filepath.Join(src, e.Name()), filepath.Join(model, e.Name()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "ts-ax650")
	var logb bytes.Buffer
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", KVCacheLen: 511, Log: &logb})
	if err != nil {
		t.Fatalf("Build: %v\nlog:\n%s", err, logb.String())
	}
	c, err := axllm.Verify(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.TokenizerType != "LLaMA" || c.URLTokenizerModel != "llama_tokenizer.txt" || c.TokensEmbedNum != 2048 || c.TokensEmbedSize != 128 {
		t.Errorf("config %+v", c)
	}
	if c.Bos == nil || !*c.Bos {
		t.Errorf("bos %v: LLaMA-family models start with BOS", c.Bos)
	}
	f, err := os.Open(filepath.Join(out, c.URLTokenizerModel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tt, err := axllm.ReadTokenizerTxt(f, c.URLTokenizerModel)
	if err != nil || tt.Type != axllm.TokenizerSentencePiece || len(tt.Pieces) != 2048 {
		t.Fatalf("exported tokenizer: %v (type %v)", err, tt)
	}
	if !fileExists(filepath.Join(out, "tokenizer", "tokenizer.json")) {
		t.Error("tokenizer.json not copied to tokenizer/")
	}
	if res.Tokenizer != "" && res.Tokenizer != c.URLTokenizerModel {
		t.Errorf("result tokenizer %q", res.Tokenizer)
	}
}

// --dry-run never fails on what the real run checks later: it returns the
// command and lists each problem as a warning; the real run stops on them.
func TestBuildDryRunWarnsInsteadOfFailing(t *testing.T) {
	log := useFakeDocker(t, "pulsar2:5.2")
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400, modelType: "gemma3", noTok: true,
		extra: map[string]any{"quantization_config": map[string]any{"quant_method": "gptq", "bits": 4}}})
	out := filepath.Join(t.TempDir(), "o")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	o := BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", Builder: BuilderLLMBuild, DryRun: true}
	res, err := Build(context.Background(), o)
	if err != nil {
		t.Fatalf("dry run failed: %v", err)
	}
	if len(res.Command) == 0 || res.Command[0] != "docker" || len(testbin.FlagValues(res.Command, "--kv_cache_len")) != 1 {
		t.Errorf("command %q", res.Command)
	}
	all := strings.Join(res.Warnings, "\n")
	for _, want := range []string{"group_size", "--tokenizer-type", "no tokenizer.json", "already exists"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if calls := testbin.ReadJSONL[[]string](t, log); len(calls) > 0 {
		t.Errorf("dry run with --builder ran the runtime: %q", calls)
	}
	o.DryRun = false
	if _, err := Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "group_size") {
		t.Errorf("real run: %v, want the group_size error", err)
	}
}
