package prep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/pulsar2"
)

// The TinyStories fixture (a SentencePiece vocabulary) compiled by
// `pulsar2 build` with the fake compiler loads in the axcl lane: the fake
// runtime reads the exported type-0 tokenizer file as axllm does, and the
// prompt it echoes went through that file's encode and decode.
func TestTinyStoriesBuildAnswersThroughAxcl(t *testing.T) {
	bins := fakeBins(t)
	model := filepath.Join(t.TempDir(), "tinystories-656k")
	copyFixture(t, model)
	out := filepath.Join(t.TempDir(), "ts-ax650")
	if _, err := pulsar2.Build(context.Background(), pulsar2.BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", KVCacheLen: 511}); err != nil {
		t.Fatal(err)
	}
	cfg, err := axllm.Verify(out)
	if err != nil || cfg.URLTokenizerModel != "llama_tokenizer.txt" {
		t.Fatalf("compiled config %+v, %v", cfg, err)
	}
	e := axcl.New(axcl.Options{Command: []string{filepath.Join(bins, "axllm"), "run", "{dir}"}, SMI: []string{}})
	m, err := e.Load(context.Background(), out, engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	must(t, err)
	var text strings.Builder
	prompt := "Once upon a time, there was a little cat named Tom."
	_, err = s.Generate(context.Background(), engine.Request{Messages: []engine.Message{{Role: "user", Content: prompt}}}, func(tok engine.Token) error {
		text.WriteString(tok.Text)
		return nil
	})
	if err != nil || text.String() != "You said: "+prompt+" (turn 1). ☕" {
		t.Fatalf("axcl lane answered %q, %v", text.String(), err)
	}

	// A broken tokenizer file fails the load with the runtime's message.
	must(t, os.WriteFile(filepath.Join(out, cfg.URLTokenizerModel), []byte("not a tokenizer\n"), 0o644))
	if _, err := e.Load(context.Background(), out, engine.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "magic number is wrong") {
		t.Errorf("load with a broken tokenizer: %v", err)
	}
}
