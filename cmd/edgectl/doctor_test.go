package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/doctor"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// runCLI runs edgectl in-process and returns exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), &cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

func doctorJSON(t *testing.T, dir string, extra ...string) (int, doctor.Report) {
	t.Helper()
	code, out, stderr := runCLI(t, append([]string{"doctor", "--json", dir}, extra...)...)
	var r doctor.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json output %q (stderr %q): %v", out, stderr, err)
	}
	return code, r
}

func findingIDs(r doctor.Report) map[string]doctor.Severity {
	m := map[string]doctor.Severity{}
	for _, f := range r.Findings {
		m[f.ID] = f.Severity
		if f.Evidence == "" {
			panic("finding without evidence: " + f.ID)
		}
	}
	return m
}

func TestDoctorGemmaStyleEOSAndKV(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gemma")
	testmodel.Write(dir, testmodel.Spec{ModelType: "gemma3", Config: map[string]any{"eos_token_id": []int{1, 106}, "kv_cache_len": 2048,
		"quantization_config": map[string]any{"quant_method": "gptq", "bits": 4, "group_size": 128}}})
	code, r := doctorJSON(t, dir)
	ids := findingIDs(r)
	// Gemma 3 text models have no ax-llm tokenizer type: a warning, not a block.
	if code != exitFixable || r.Verdict != "fixable" || ids["eos-array"] != doctor.Fixable || ids["kv-cache-len"] != doctor.Fixable || ids["family"] != doctor.Warning {
		t.Fatalf("exit %d verdict %s findings %v", code, r.Verdict, ids)
	}
	for _, f := range r.Findings {
		if f.ID == "kv-cache-len" && !strings.Contains(f.Message, "2047") {
			t.Fatalf("kv finding does not name 2047: %s", f.Message)
		}
		if f.ID == "eos-array" && !strings.Contains(f.Fix, "edgectl patch config") {
			t.Fatalf("eos fix %q", f.Fix)
		}
	}
	// After the suggested fixes, doctor passes.
	fixed := dir + "-fixed"
	if c, _, e := runCLI(t, "patch", "config", dir, "-o", fixed, "--kv-cache-len", "2048"); c != 0 {
		t.Fatalf("patch config: %d %s", c, e)
	}
	if code, r := doctorJSON(t, fixed); code != exitOK || r.Verdict != "pass" {
		t.Fatalf("after fix: exit %d %+v", code, r.Findings)
	}
}

func TestDoctorQwen3MissingNormsAndMRoPE(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qwen3")
	testmodel.Write(dir, testmodel.Spec{ModelType: "qwen3", Omit: func(n string) bool { return strings.Contains(n, "k_norm") },
		Config: map[string]any{"rope_scaling": map[string]any{"mrope_section": []int{16, 24, 24}, "rope_type": "default"}}})
	code, r := doctorJSON(t, dir)
	ids := findingIDs(r)
	if ids["layernorm-missing"] != doctor.Fixable || ids["mrope"] != doctor.Warning || ids["quantization"] != doctor.Quantize || code != exitFixable || ids["family"] != "" {
		t.Fatalf("exit %d findings %v", code, ids)
	}
	fixed := dir + "-norms"
	if c, _, e := runCLI(t, "patch", "layernorm", dir, "-o", fixed); c != 0 {
		t.Fatalf("patch layernorm: %d %s", c, e)
	}
	if _, r := doctorJSON(t, fixed); findingIDs(r)["layernorm-missing"] != "" {
		t.Fatal("norms still missing after patch layernorm")
	}
}

func TestDoctorBlocksMoEAndBadDTypes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "moe")
	testmodel.Write(dir, testmodel.Spec{ModelType: "qwen2", Config: map[string]any{"num_experts": 60, "num_experts_per_tok": 4}})
	code, r := doctorJSON(t, dir)
	if ids := findingIDs(r); code != exitBlocked || ids["moe"] != doctor.Blocking {
		t.Fatalf("exit %d findings %v", code, ids)
	}
	mix := filepath.Join(t.TempDir(), "mixtral")
	testmodel.Write(mix, testmodel.Spec{Config: map[string]any{"num_local_experts": 8}})
	if code, _ := doctorJSON(t, mix); code != exitBlocked {
		t.Fatalf("num_local_experts: exit %d", code)
	}
	vocab := filepath.Join(t.TempDir(), "vocab")
	testmodel.Write(vocab, testmodel.Spec{Config: map[string]any{"vocab_size": 512}})
	if _, r := doctorJSON(t, vocab); findingIDs(r)["vocab-size"] != doctor.Blocking {
		t.Fatalf("embedding smaller than vocab_size: %v", findingIDs(r))
	}
}

func TestDoctorStubAndInvalidConfigs(t *testing.T) {
	for _, c := range []struct{ name, content, id string }{
		{"empty", "", "config-empty"},
		{"invalid", "{\"a\": }", "config-invalid"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(c.content), 0o644)
		code, r := doctorJSON(t, dir)
		if code != exitBlocked || findingIDs(r)[c.id] != doctor.Blocking {
			t.Fatalf("%s: exit %d %v", c.name, code, findingIDs(r))
		}
	}
	// A compiled ax-llm directory with a 0-byte config can be regenerated.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "qwen3_post.axmodel"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "qwen3_p128_l0_together.axmodel"), []byte("x"), 0o644) // without layers it is blocked
	if code, r := doctorJSON(t, dir); code != exitFixable || findingIDs(r)["config-empty"] != doctor.Fixable {
		t.Fatalf("compiled dir: exit %d %v", code, findingIDs(r))
	}
}

func TestDoctorOnRealFixture(t *testing.T) {
	code, r := doctorJSON(t, filepath.Join("..", "..", "testdata", "models", "tinystories-656k"))
	ids := findingIDs(r)
	// F32, unquantized, tied embedding stored as lm_head only; nothing blocks.
	if code != exitFixable || ids["quantization"] != doctor.Quantize || ids["fp32-weights"] != doctor.Warning || ids["embedding-tied"] != doctor.Warning {
		t.Fatalf("exit %d %v", code, ids)
	}
	code, out, _ := runCLI(t, "doctor", filepath.Join("..", "..", "testdata", "models", "tinystories-656k"))
	if code != exitFixable || !strings.Contains(out, "fix: edgectl quant pack") {
		t.Fatalf("human output (exit %d):\n%s", code, out)
	}
}

func writeGemma(t *testing.T, dir string) {
	t.Helper()
	if err := testmodel.Write(dir, testmodel.Spec{ModelType: "gemma3", Config: map[string]any{"eos_token_id": []int{1, 106}}}); err != nil {
		t.Fatal(err)
	}
}
