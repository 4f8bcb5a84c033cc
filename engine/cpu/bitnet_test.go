package cpu

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/h1b"
)

const qwenTok = "../../testdata/models/qwen3-tokenizer"

// TestBitNetSameTokensInEveryFormat runs one generated BitNet model from
// its float safetensors and from GGUF TQ1_0/TQ2_0 and .h1b HALO_V2/Sherry/
// base-3: the greedy tokens must be identical.
func TestBitNetSameTokensInEveryFormat(t *testing.T) {
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 2, heads: 4, kv: 2, vocab: 6400, seed: 1}
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyFile(t, filepath.Join(qwenTok, f), filepath.Join(dir, f))
	}
	paths := map[string]string{
		"safetensors": dir,
		"TQ2_0":       filepath.Join(dir, "m-tq2.gguf"),
		"TQ1_0":       filepath.Join(dir, "m-tq1.gguf"),
		"halo2":       filepath.Join(dir, "m-halo2.h1b"),
		"sherry":      filepath.Join(dir, "m-sherry.h1b"),
		"tq1h":        filepath.Join(dir, "m-tq1h.h1b"),
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(spec.writeSafetensors(dir))
	must(spec.writeGGUF(paths["TQ2_0"], gguf.TypeTQ2_0))
	must(spec.writeGGUF(paths["TQ1_0"], gguf.TypeTQ1_0))
	must(spec.writeH1B(paths["halo2"], h1b.V2HALO2))
	must(spec.writeH1B(paths["sherry"], h1b.V3Sherry))
	must(spec.writeH1B(paths["tq1h"], h1b.V4TQ1))

	var want []int
	for _, name := range []string{"safetensors", "TQ2_0", "TQ1_0", "halo2", "sherry", "tq1h"} {
		m := loadModel(t, paths[name])
		if m.arch.name != "bitnet" || !m.arch.relu2 || !m.arch.subNorm {
			t.Fatalf("%s: loaded as %+v", name, m.arch)
		}
		if name != "safetensors" && m.info.Quantization != name {
			t.Errorf("%s: quantization reported as %q", name, m.info.Quantization)
		}
		var ids []int
		s, _ := m.NewSession()
		_, err := s.Generate(t.Context(), engine.Request{Prompt: "The quick brown fox", MaxTokens: 12, Sampling: greedy()},
			func(tk engine.Token) error { ids = append(ids, tk.ID); return nil })
		must(err)
		if want == nil {
			t.Logf("greedy tokens: %v", ids)
			if distinct(ids) < 3 {
				t.Fatalf("degenerate output %v: the test would not tell formats apart", ids)
			}
			want = ids
			if len(ids) < 12 {
				t.Fatalf("only %d tokens", len(ids))
			}
			continue
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s: greedy tokens %v, safetensors gave %v", name, ids, want)
		}
	}
}

func distinct(ids []int) int {
	seen := map[int]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	return len(seen)
}
