package patch

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/testmodel"
)

// TestLayerNormPlanSameUnderEveryPrefix: a sharded Gemma 3 checkpoint in a
// multimodal wrapper's naming gets the same norms, in the same shards, as
// the plain one; --name places an extra norm by its decoder layer.
func TestLayerNormPlanSameUnderEveryPrefix(t *testing.T) {
	plan := func(prefix, head string) []NormAdd {
		src := filepath.Join(t.TempDir(), "gemma3")
		spec := testmodel.Spec{ModelType: "gemma3", Layers: 4, Shards: 3, Prefix: prefix, Head: head, Omit: omitNorms}
		if err := testmodel.Write(src, spec); err != nil {
			t.Fatal(err)
		}
		p, err := PlanLayerNorm(src, LayerNormOptions{Extra: []string{prefix + "layers.3.extra.weight"}})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for i := range p.Adds {
			p.Adds[i].Name = "model." + strings.TrimPrefix(p.Adds[i].Name, prefix)
		}
		return p.Adds
	}
	want := plan("model.", "")
	// 1 final norm + 4 layers × 6 + the extra one.
	if len(want) != 26 {
		t.Fatalf("plain plan adds %d norms, want 26", len(want))
	}
	for _, a := range want {
		if a.Name == "model.layers.3.extra.weight" && a.Shard != "model-00003-of-00003.safetensors" {
			t.Errorf("extra norm of layer 3 goes to %s", a.Shard)
		}
	}
	for _, l := range []struct{ prefix, head string }{{"model.language_model.", ""}, {"language_model.model.", "language_model.lm_head.weight"}, {"llm.model.", "llm.lm_head.weight"}} {
		got := plan(l.prefix, l.head)
		if len(got) != len(want) {
			t.Fatalf("%s: %d adds, want %d", l.prefix, len(got), len(want))
		}
		for i := range want {
			if got[i].Name != want[i].Name || got[i].Shard != want[i].Shard || got[i].Fill != want[i].Fill {
				t.Errorf("%s: add %d is %+v, want %+v", l.prefix, i, got[i], want[i])
			}
		}
	}
}
