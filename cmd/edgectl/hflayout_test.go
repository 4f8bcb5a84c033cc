package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/testmodel"
)

// TestLanguageModelLayoutsWorkTheSame: one decoder saved under each
// naming Hugging Face uses (plain *ForCausalLM, the multimodal wrappers'
// model.language_model.*, the older language_model.model.*, llm.model.*)
// goes through inspect, doctor, patch layernorm, quant pack and run with
// the same results once names and paths are mapped to the plain naming.
// Weights are seeded by the plain name, so even the generated text and the
// GGUF bytes must match.
func TestLanguageModelLayoutsWorkTheSame(t *testing.T) {
	layouts := []struct{ prefix, head string }{
		{"model.", "lm_head.weight"}, // the reference: first
		{"model.language_model.", "lm_head.weight"},
		{"language_model.model.", "language_model.lm_head.weight"},
		{"llm.model.", "llm.lm_head.weight"},
	}
	var want map[string]string
	for _, l := range layouts {
		t.Run(strings.TrimSuffix(l.prefix, "."), func(t *testing.T) {
			got := layoutPipeline(t, l.prefix, l.head)
			if want == nil {
				want = got
				return
			}
			for _, step := range slices.Sorted(maps.Keys(want)) {
				if got[step] != want[step] {
					t.Errorf("%s differs from the plain layout:\n got: %s\nwant: %s", step, got[step], want[step])
				}
			}
		})
	}
	if want == nil {
		t.Fatal("the plain layout did not run")
	}
}

// layoutPipeline runs every command over a llama checkpoint named with
// prefix and head, missing one norm, and returns each step's output with
// names and paths put in the plain naming.
func layoutPipeline(t *testing.T, prefix, head string) map[string]string {
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	missing := prefix + "layers.1.post_attention_layernorm.weight"
	spec := testmodel.Spec{Vocab: 2048, Prefix: prefix, Head: head, Omit: func(n string) bool { return n == missing }}
	if err := testmodel.Write(dir, spec); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"} {
		b, err := os.ReadFile(filepath.Join(runFixture, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The head before the prefix: "language_model.lm_head.weight" and
	// "language_model.model." start alike.
	plain := strings.NewReplacer(root, "ROOT", head, "lm_head.weight", prefix, "model.").Replace
	out := map[string]string{}
	cli := func(step string, args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 && !strings.HasPrefix(step, "doctor") { // doctor exits with its verdict
			t.Fatalf("%s: exit %d: %s", step, code, stderr)
		}
		out[step] = fmt.Sprintf("exit %d: %s", code, plain(stdout))
		return stdout
	}
	// quant's summary line carries timings: its outputs are compared instead.
	quant := func(args ...string) {
		t.Helper()
		if code, _, stderr := runCLI(t, append([]string{"quant", "pack"}, args...)...); code != 0 {
			t.Fatalf("quant pack %v: exit %d: %s", args, code, stderr)
		}
	}

	out["inspect"] = inspectSummary(t, dir, plain)
	cli("doctor", "--json", "doctor", dir)
	if !strings.Contains(out["doctor"], `"layernorm-missing"`) || !strings.Contains(out["doctor"], "model.layers.1.post_attention_layernorm.weight") {
		t.Fatalf("doctor does not report the missing norm: %s", out["doctor"])
	}

	fixed := filepath.Join(root, "fixed")
	cli("patch layernorm", "patch", "layernorm", dir, "-o", fixed)
	out["inspect fixed"] = inspectSummary(t, fixed, plain)
	if !strings.Contains(out["inspect fixed"], "model.layers.1.post_attention_layernorm.weight") {
		t.Fatalf("patch layernorm did not add %s: %s", missing, out["inspect fixed"])
	}
	cli("doctor fixed", "--json", "doctor", fixed)
	if strings.Contains(out["doctor fixed"], "layernorm-missing") {
		t.Fatalf("doctor after patch layernorm: %s", out["doctor fixed"])
	}

	gguf := filepath.Join(root, "fixed.gguf")
	quant(fixed, "-o", gguf, "--format", "f16")
	b, err := os.ReadFile(gguf)
	if err != nil {
		t.Fatal(err)
	}
	out["gguf bytes"] = fmt.Sprintf("%x", sha256.Sum256(b))
	gptq := filepath.Join(root, "gptq")
	quant(fixed, "-o", gptq, "--format", "gptq-int4")
	out["inspect gptq"] = inspectSummary(t, gptq, plain)

	text := cli("run", "run", fixed, "Once upon a time", "-n", "8", "--temperature", "0")
	if strings.TrimSpace(text) == "" {
		t.Fatal("run generated nothing")
	}
	return out
}

// inspectSummary is inspect --json of dir without what the naming moves
// (header offsets) and with names in the plain naming.
func inspectSummary(t *testing.T, dir string, plain func(string) string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, "--json", "inspect", dir)
	if code != 0 {
		t.Fatalf("inspect %s: exit %d: %s", dir, code, stderr)
	}
	var r report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("inspect %s: %v", dir, err)
	}
	for i := range r.Tensors {
		r.Tensors[i].Name, r.Tensors[i].Offset = plain(r.Tensors[i].Name), 0
	}
	sort.Slice(r.Tensors, func(i, j int) bool { return r.Tensors[i].Name < r.Tensors[j].Name })
	b, _ := json.Marshal(r)
	return plain(string(b))
}
