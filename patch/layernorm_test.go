package patch

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ref "github.com/nlpodyssey/safetensors"

	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/testmodel"
)

func omitNorms(name string) bool {
	return strings.HasSuffix(name, "norm.weight")
}

func applyLayerNorm(t *testing.T, src, dst string, opts LayerNormOptions) *LayerNormPlan {
	t.Helper()
	plan, err := PlanLayerNorm(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plan.Close() })
	out, err := NewOutput(src, dst, dst == "")
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(out, nil); err != nil {
		t.Fatal(err)
	}
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
	return plan
}

func TestInjectQwen3NormsIntoShards(t *testing.T) {
	src := filepath.Join(t.TempDir(), "qwen3")
	spec := testmodel.Spec{ModelType: "qwen3", Layers: 4, Shards: 3, Omit: omitNorms}
	if err := testmodel.Write(src, spec); err != nil {
		t.Fatal(err)
	}
	before, _ := safetensors.OpenCheckpoint(src)
	defer before.Close()
	dst := filepath.Join(t.TempDir(), "out")
	plan := applyLayerNorm(t, src, dst, LayerNormOptions{})
	// 1 model norm + 4 layers × (input, post_attention, q_norm, k_norm).
	if len(plan.Adds) != 17 {
		t.Fatalf("added %d norms, want 17", len(plan.Adds))
	}
	after, err := safetensors.OpenCheckpoint(dst)
	if err != nil {
		t.Fatalf("output does not validate: %v", err)
	}
	defer after.Close()
	for _, f := range after.Files {
		raw, _ := os.ReadFile(f.Path)
		st, err := ref.Deserialize(raw)
		if err != nil {
			t.Fatalf("%s rejected by nlpodyssey/safetensors: %v", f.Path, err)
		}
		if hl := f.Size(); (f.DataStart())%8 != 0 {
			t.Fatalf("%s: data starts unaligned (size %d)", f.Path, hl)
		}
		_ = st
	}
	// Every original tensor's bytes are unchanged, in the same shard.
	for _, bf := range before.Files {
		for _, tn := range bf.Tensors {
			af, at, ok := after.Lookup(tn.Name)
			if !ok || filepath.Base(af.Path) != filepath.Base(bf.Path) {
				t.Fatalf("%s moved or vanished", tn.Name)
			}
			b1, _ := bf.Bytes(tn)
			b2, _ := af.Bytes(at)
			if !bytes.Equal(b1, b2) || at.Begin != tn.Begin {
				t.Fatalf("%s bytes or offsets changed", tn.Name)
			}
		}
	}
	// Layer norms land in the shard of their layer; q_norm has head_dim; F16 1.0.
	qf, qn, ok := after.Lookup("model.layers.2.self_attn.q_norm.weight")
	if !ok || qn.DType != safetensors.F16 || len(qn.Shape) != 1 || qn.Shape[0] != 16 {
		t.Fatalf("q_norm %+v", qn)
	}
	lf, _, _ := after.Lookup("model.layers.2.self_attn.q_proj.weight")
	if qf.Path != lf.Path {
		t.Fatalf("q_norm in %s, its layer in %s", qf.Path, lf.Path)
	}
	vals, _ := qf.Float32(qn)
	for _, v := range vals {
		if v != 1 {
			t.Fatalf("fill %v", v)
		}
	}
	// The index maps the new tensors and total_size is exact.
	if after.Index.WeightMap["model.norm.weight"] == "" || after.Index.TotalSize() != after.TensorBytes() {
		t.Fatalf("index total_size %d, tensors %d", after.Index.TotalSize(), after.TensorBytes())
	}
	// Idempotent: a second run on the output adds nothing.
	again, err := PlanLayerNorm(dst, LayerNormOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if len(again.Adds) != 0 {
		t.Fatalf("second run would add %d", len(again.Adds))
	}
	// The input is untouched.
	if st, _ := os.Stat(filepath.Join(src, "model-00001-of-00003.safetensors.orig")); st != nil {
		t.Fatal("-o run left a backup in the input")
	}
}

func TestGemmaNormsAreZeroFilledAndExtraNames(t *testing.T) {
	src := filepath.Join(t.TempDir(), "gemma")
	testmodel.Write(src, testmodel.Spec{ModelType: "gemma2", Omit: func(n string) bool { return strings.Contains(n, "feedforward_layernorm") }})
	plan := applyLayerNorm(t, src, "", LayerNormOptions{DType: safetensors.BF16, Extra: []string{"model.layers.0.extra.weight=2x8"}})
	if len(plan.Adds) != 5 {
		t.Fatalf("adds %+v", plan.Adds)
	}
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tn, _ := f.Tensor("model.layers.1.pre_feedforward_layernorm.weight")
	vals, _ := f.Float32(tn)
	if tn.DType != safetensors.BF16 || vals[0] != 0 {
		t.Fatalf("gemma fill %v %s", vals[0], tn.DType)
	}
	ex, _ := f.Tensor("model.layers.0.extra.weight")
	if len(ex.Shape) != 2 || ex.Shape[0] != 2 || ex.Shape[1] != 8 {
		t.Fatalf("extra shape %v", ex.Shape)
	}
	if _, err := os.Stat(filepath.Join(src, "model.safetensors.orig")); err != nil {
		t.Fatal("--in-place did not keep model.safetensors.orig")
	}
}

func TestBitNetSubNorms(t *testing.T) {
	src := filepath.Join(t.TempDir(), "bitnet")
	testmodel.Write(src, testmodel.Spec{ModelType: "bitnet", Omit: func(n string) bool { return strings.Contains(n, "sub_norm") }})
	plan, err := PlanLayerNorm(src, LayerNormOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	got := map[string][]int64{}
	for _, a := range plan.Adds {
		got[a.Name] = a.Shape
	}
	if s := got["model.layers.1.mlp.ffn_sub_norm.weight"]; len(got) != 4 || len(s) != 1 || s[0] != 128 {
		t.Fatalf("bitnet adds %v", got)
	}
}
