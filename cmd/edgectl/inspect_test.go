package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/testmodel"
)

func TestInspectShardedCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qwen3")
	spec := testmodel.Spec{ModelType: "qwen3", Shards: 2}
	testmodel.Write(dir, spec)
	code, out, stderr := runCLI(t, "inspect", "--json", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	var params int64
	for _, tn := range spec.Tensors() {
		n := int64(1)
		for _, d := range tn.Shape {
			n *= d
		}
		params += n
	}
	if r.Format != "checkpoint" || r.Architecture != "Qwen3ForCausalLM" || r.Parameters != params || len(r.Files) != 2 ||
		r.Dims.HeadDim != 16 || r.DTypes["BF16"] != len(spec.Tensors()) || r.TensorBytes != 2*params {
		t.Fatalf("report %+v dims %+v", r, r.Dims)
	}
}

func TestInspectTensorAndRaw(t *testing.T) {
	fixture := filepath.Join("..", "..", "testdata", "models", "tinystories-656k")
	code, out, _ := runCLI(t, "inspect", fixture)
	if code != 0 || !strings.Contains(out, "LlamaForCausalLM") || !strings.Contains(out, "656.0K") || !strings.Contains(out, "byte fallback") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	file := filepath.Join(fixture, "model.safetensors")
	code, out, _ = runCLI(t, "inspect", file, "--tensor", "model.layers.0.self_attn.k_proj.weight", "--json")
	var te tensorEntry
	if code != 0 || json.Unmarshal([]byte(out), &te) != nil || te.DType != "F32" || te.Shape[0] != 64 || te.Size != 64*128*4 {
		t.Fatalf("tensor header: exit %d %s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", file, "--tensor", "model.layers.0.self_attn.k_proj.weight", "--raw")
	whole, _ := os.ReadFile(file)
	if code != 0 || !bytes.Equal([]byte(out), whole[te.Offset:te.Offset+te.Size]) {
		t.Fatalf("--raw: exit %d, %d bytes, not the stored bytes at offset %d", code, len(out), te.Offset)
	}
	// The same bytes through the checkpoint directory.
	code, out2, _ := runCLI(t, "inspect", fixture, "--tensor", "model.layers.0.self_attn.k_proj.weight", "--raw")
	if code != 0 || out2 != out {
		t.Fatal("--raw on the directory differs")
	}
	if code, _, stderr := runCLI(t, "inspect", file, "--tensor", "nope"); code != 1 || !strings.Contains(stderr, `no tensor "nope"`) {
		t.Fatalf("unknown tensor: %d %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "inspect", file, "--raw"); code != 2 {
		t.Fatalf("--raw without --tensor: %d", code)
	}
}

func TestInspectSingleFileMetadata(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.safetensors")
	f, _ := os.Create(p)
	safetensors.Write(f, map[string]string{"format": "pt"}, []safetensors.Source{
		{Name: "w", DType: safetensors.F16, Shape: []int64{2, 3}, WriteTo: safetensors.FromBytes(make([]byte, 12))}})
	f.Close()
	code, out, _ := runCLI(t, "inspect", p)
	if code != 0 || !strings.Contains(out, "format: pt") || !strings.Contains(out, "F16×1") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
