package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/testmodel"
)

func bitnetCheckpoint(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bitnet")
	if err := testmodel.Write(dir, testmodel.Spec{ModelType: "bitnet", Hidden: 256, FFN: 512, Heads: 4, KVHeads: 2, Vocab: 64, Shards: 2}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestQuantPackGGUFAndInspect: pack a sharded checkpoint to TQ2_0 with
// --json, then inspect the GGUF and dump one tensor raw.
func TestQuantPackGGUFAndInspect(t *testing.T) {
	in := bitnetCheckpoint(t)
	out := filepath.Join(t.TempDir(), "m.gguf")
	code, stdout, stderr := runCLI(t, "--json", "quant", "pack", in, "-o", out, "--format", "tq2_0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var done struct {
		Event  string
		Result struct {
			Files   []string
			Tensors []struct{ Name, Type string }
		}
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for _, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("stdout is not JSON lines: %q", l)
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &done); err != nil || done.Event != "done" || len(done.Result.Files) != 1 {
		t.Fatalf("last event %q", lines[len(lines)-1])
	}
	if !strings.Contains(stdout, "no tokenizer.json") || !strings.Contains(stdout, "untied lm_head.weight not written") {
		t.Errorf("missing tokenizer warning event: %s", stdout)
	}
	code, stdout, stderr = runCLI(t, "--json", "inspect", out)
	if code != 0 {
		t.Fatalf("inspect exit %d: %s", code, stderr)
	}
	var r report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Format != "gguf" || r.Architecture != "bitnet" || r.Dims.Layers != 2 || r.DTypes["TQ2_0"] != 14 || r.DTypes["F16"] != 1 {
		t.Errorf("report %+v", r)
	}
	var q tensorEntry
	for _, e := range r.Tensors {
		if e.Name == "blk.0.attn_q.weight" {
			q = e
		}
	}
	if q.DType != "TQ2_0" || q.Size != 256*66 {
		t.Fatalf("attn_q entry %+v", q)
	}
	code, raw, _ := runCLI(t, "inspect", out, "--tensor", "blk.0.attn_q.weight", "--raw")
	file, _ := os.ReadFile(out)
	if code != 0 || !bytes.Equal([]byte(raw), file[q.Offset:q.Offset+q.Size]) {
		t.Errorf("--raw gave %d bytes (exit %d)", len(raw), code)
	}
}

// TestSherryPackVerifyInspect: `sherry pack` writes .h1b v3 that `sherry
// verify` accepts and `inspect` names legacy-style.
func TestSherryPackVerifyInspect(t *testing.T) {
	in := bitnetCheckpoint(t)
	out := filepath.Join(t.TempDir(), "m.h1b")
	if code, _, stderr := runCLI(t, "sherry", "pack", in, "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "--json", "sherry", "verify", out)
	if code != 0 || !strings.Contains(stdout, `"ok": true`) {
		t.Fatalf("verify exit %d: %s %s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "--json", "inspect", out)
	var r report
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil {
		t.Fatalf("inspect exit %d", code)
	}
	names := map[string]tensorEntry{}
	for _, e := range r.Tensors {
		names[e.Name] = e
	}
	for _, n := range []string{"embedding", "final_norm", "layers.1.ffn_sub_norm", "layers.0.q", "layers.0.q.scales", "layers.1.down", "lm_head"} {
		if _, ok := names[n]; !ok {
			t.Errorf("inspect lacks %s", n)
		}
	}
	if names["layers.1.down"].DType != "sherry" || names["layers.1.down"].Size != 256*512*5/32 {
		t.Errorf("down %+v", names["layers.1.down"])
	}
	code, raw, _ := runCLI(t, "inspect", out, "--tensor", "layers.0.q.scales", "--raw")
	if code != 0 || len(raw) != 4*256 {
		t.Errorf("scales raw: exit %d, %d bytes", code, len(raw))
	}
	// A HALO file is not Sherry.
	halo := filepath.Join(t.TempDir(), "m.h1b")
	runCLI(t, "quant", "pack", in, "-o", halo, "--format", "halo2")
	if code, _, stderr := runCLI(t, "sherry", "verify", halo); code != 1 || !strings.Contains(stderr, "not 3 (Sherry)") {
		t.Errorf("verify of halo2: exit %d %s", code, stderr)
	}
}

func TestQuantPackErrorsExitCodes(t *testing.T) {
	in := bitnetCheckpoint(t)
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "quant", "pack", in, "-o", filepath.Join(dir, "x"), "--format", "q4_k"); code != 2 || !strings.Contains(stderr, "want one of") {
		t.Errorf("bad format: exit %d %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "quant", "pack", in, "--format", "tq2_0"); code != 2 {
		t.Errorf("missing -o: exit %d", code)
	}
	if code, _, stderr := runCLI(t, "quant", "pack", in, "-o", filepath.Join(dir, "x"), "--format", "halo2", "--ternarize", "none"); code != 1 || !strings.Contains(stderr, "own quantizer") {
		t.Errorf("halo2 none: exit %d %s", code, stderr)
	}
	// ffn 96 is not a multiple of 256: one line naming the tensor.
	odd := filepath.Join(t.TempDir(), "odd")
	testmodel.Write(odd, testmodel.Spec{ModelType: "bitnet", Hidden: 256, FFN: 96, Heads: 4, Vocab: 64})
	code, _, stderr := runCLI(t, "quant", "pack", odd, "-o", filepath.Join(dir, "odd.gguf"), "--format", "tq1_0")
	if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, `"model.layers.0.mlp.down_proj.weight" [256 96]`) {
		t.Errorf("odd ffn: exit %d %q", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed packs left %v", entries)
	}
}

// TestQuantPackGPTQAndHtok: gptq-int4 through the CLI gives a checkpoint
// inspect reads, and a tokenizer-carrying .h1b pack gives an .htok that
// inspect describes.
func TestQuantPackGPTQAndHtok(t *testing.T) {
	in := bitnetCheckpoint(t)
	out := filepath.Join(t.TempDir(), "gptq")
	if code, _, stderr := runCLI(t, "quant", "pack", in, "-o", out, "--format", "gptq-int4"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "--json", "inspect", out)
	if code != 0 {
		t.Fatalf("inspect exit %d: %s", code, stderr)
	}
	var r report
	json.Unmarshal([]byte(stdout), &r)
	if r.DTypes["I32"] != 2*7*3 || r.DTypes["F16"] != 2*7 {
		t.Errorf("dtypes %v", r.DTypes)
	}
	if code, _, _ := runCLI(t, "quant", "pack", in, "-o", out, "--format", "gptq-int4"); code != 1 {
		t.Errorf("existing output dir: exit %d", code)
	}

	// .htok: give the checkpoint a tokenizer.
	tokdir := t.TempDir()
	h1bIn := filepath.Join(tokdir, "m")
	testmodel.Write(h1bIn, testmodel.Spec{ModelType: "bitnet", Hidden: 256, FFN: 512, Heads: 4, KVHeads: 2, Vocab: 8})
	os.WriteFile(filepath.Join(h1bIn, "tokenizer.json"), []byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},
		"pre_tokenizer":{"type":"ByteLevel"},"added_tokens":[{"id":7,"content":"<s>","special":true}]}`), 0o644)
	os.WriteFile(filepath.Join(h1bIn, "tokenizer_config.json"), []byte(`{"bos_token":"<s>","eos_token":"<s>"}`), 0o644)
	h1bOut := filepath.Join(tokdir, "m.h1b")
	if code, _, stderr := runCLI(t, "quant", "pack", h1bIn, "-o", h1bOut, "--format", "tq1h"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, stdout, _ = runCLI(t, "--json", "inspect", filepath.Join(tokdir, "m.htok"))
	var hr report
	if code != 0 || json.Unmarshal([]byte(stdout), &hr) != nil || hr.Format != "htok" || hr.Tokenizer.VocabSize != 8 || hr.Metadata["merges"] != float64(1) || hr.Metadata["bos_id"] != float64(7) {
		t.Errorf("htok inspect exit %d: %s", code, stdout)
	}
	// inspect of the .h1b finds its sidecar.
	code, stdout, _ = runCLI(t, "--json", "inspect", h1bOut)
	if code != 0 || !strings.Contains(stdout, "m.htok") || !strings.Contains(stdout, `"packing": "tq1h"`) {
		t.Errorf("h1b inspect: %s", stdout)
	}
}

// TestQuantPackBareSafetensors: a safetensors file with no config.json
// beside it packs to a tensors-only GGUF (exit 0, one warning line on
// stderr) whose tensors equal the source's, into a directory -o creates;
// a format that needs config.json refuses in one line.
func TestQuantPackBareSafetensors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if err := testmodel.Write(dir, testmodel.Spec{ModelType: "llama", Hidden: 256, FFN: 512, Heads: 4, KVHeads: 2, Vocab: 64}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		os.Remove(filepath.Join(dir, n))
	}
	in := filepath.Join(dir, "model.safetensors")
	out := filepath.Join(t.TempDir(), "new", "dir", "x.gguf")
	code, stdout, stderr := runCLI(t, "quant", "pack", in, "-o", out, "--format", "f32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var warnings []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "warning: ") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "no config.json") || !strings.Contains(warnings[0], "cannot load it as a model") {
		t.Errorf("warnings %q (stderr %q)", warnings, stderr)
	}
	if !strings.Contains(stdout, "wrote "+out) {
		t.Errorf("stdout %q", stdout)
	}
	src, err := safetensors.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	g, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Architecture() != "" || len(g.Tensors) != len(src.Tensors) {
		t.Fatalf("architecture %q, %d tensors for %d", g.Architecture(), len(g.Tensors), len(src.Tensors))
	}
	for _, st := range src.Tensors {
		want, err := src.Float32(st)
		if err != nil {
			t.Fatal(err)
		}
		ti, ok := g.Tensor(st.Name)
		if !ok {
			t.Fatalf("GGUF lacks %q", st.Name)
		}
		b, _ := g.Bytes(ti)
		got := make([]float32, ti.Elements())
		if err := gguf.Dequantize(ti.Type, b, got); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %s values differ from the source (%v)", st.Name, ti.Type, err)
		}
	}

	code, stdout, _ = runCLI(t, "--json", "inspect", out)
	var r report
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || r.Format != "gguf" || r.Architecture != "" || len(r.Tensors) != len(src.Tensors) {
		t.Errorf("inspect exit %d: %+v", code, r)
	}

	code, _, stderr = runCLI(t, "quant", "pack", in, "-o", filepath.Join(t.TempDir(), "m.h1b"), "--format", "sherry")
	if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "no config.json") {
		t.Errorf("sherry on a bare file: exit %d %q", code, stderr)
	}
}
