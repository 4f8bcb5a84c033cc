package patch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/hfconfig"
)

// gemmaDir writes a Gemma-3-style checkpoint config: eos_token_id [1, 106]
// in both config.json and generation_config.json.
func gemmaDir(t *testing.T, tokenizerEOS string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := "{\n  \"architectures\": [\"Gemma3ForCausalLM\"],\n  \"eos_token_id\": [\n    1,\n    106\n  ],\n  \"hidden_size\": 1152,\n  \"model_type\": \"gemma3_text\",\n  \"vendor_extra\": {\"keep\": true}\n}\n"
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644)
	os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte("{\n  \"bos_token_id\": 2,\n  \"eos_token_id\": [1, 106]\n}\n"), 0o644)
	if tokenizerEOS != "" {
		os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},
			"added_tokens":[{"id":1,"content":"<eos>","special":true},{"id":106,"content":"<end_of_turn>","special":true}]}`), 0o644)
		os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"eos_token":"`+tokenizerEOS+`"}`), 0o644)
	}
	return dir
}

func TestEOSChoice(t *testing.T) {
	one := 1
	cases := []struct {
		name   string
		tokEOS string
		eos    *int
		want   int
		reason string
	}{
		{"tokenizer eos wins", "<end_of_turn>", nil, 106, `eos_token "<end_of_turn>" is id 106`},
		{"tokenizer eos <eos>", "<eos>", nil, 1, `eos_token "<eos>" is id 1`},
		{"no tokenizer: last entry", "", nil, 106, "last entry of [1 106]"},
		{"--eos", "<end_of_turn>", &one, 1, "chosen with --eos"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := gemmaDir(t, c.tokEOS)
			edits, err := PlanConfig(dir, ConfigOptions{EOS: c.eos})
			if err != nil {
				t.Fatal(err)
			}
			if len(edits) != 2 {
				t.Fatalf("want config.json and generation_config.json edits, got %d", len(edits))
			}
			for _, e := range edits {
				cfg, err := hfconfig.Parse(e.New, e.Name)
				if err != nil {
					t.Fatal(err)
				}
				if cfg.EosIsArray || len(cfg.EosTokenID) != 1 || cfg.EosTokenID[0] != c.want {
					t.Fatalf("%s: eos %v", e.Name, cfg.EosTokenID)
				}
				if !strings.Contains(e.Changes[0].Reason, c.reason) {
					t.Fatalf("reason %q lacks %q", e.Changes[0].Reason, c.reason)
				}
			}
		})
	}
	bad := 5
	if _, err := PlanConfig(gemmaDir(t, ""), ConfigOptions{EOS: &bad}); err == nil || !strings.Contains(err.Error(), "not one of") {
		t.Fatalf("--eos outside the list: %v", err)
	}
}

func TestMinimalDiffAndKVLength(t *testing.T) {
	dir := gemmaDir(t, "")
	edits, err := PlanConfig(dir, ConfigOptions{KVCacheLen: 2048})
	if err != nil {
		t.Fatal(err)
	}
	diff := UnifiedDiff("config.json", edits[0].Old, edits[0].New)
	var minus, plus []string
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "---") || strings.HasPrefix(l, "+++"):
		case strings.HasPrefix(l, "-"):
			minus = append(minus, l)
		case strings.HasPrefix(l, "+"):
			plus = append(plus, l)
		}
	}
	// The array's 4 lines become one; vendor_extra gains a comma; kv_cache_len is added.
	if len(minus) != 5 || len(plus) != 3 || !strings.Contains(diff, `+  "kv_cache_len": 2047`) || !strings.Contains(diff, `+  "eos_token_id": 106,`) {
		t.Fatalf("diff is not minimal:\n%s", diff)
	}
	for _, k := range []string{`"vendor_extra": {"keep": true}`, `"architectures": ["Gemma3ForCausalLM"]`} {
		if !strings.Contains(string(edits[0].New), k) {
			t.Fatalf("lost %s", k)
		}
	}
}

func TestInPlaceKeepsBackupAndIsIdempotent(t *testing.T) {
	dir := gemmaDir(t, "")
	orig, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	apply := func() int {
		edits, err := PlanConfig(dir, ConfigOptions{KVCacheLen: 2048})
		if err != nil {
			t.Fatal(err)
		}
		out, err := NewOutput(dir, "", true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range edits {
			if err := out.WriteBytes(e.Name, e.New); err != nil {
				t.Fatal(err)
			}
		}
		if err := out.Commit(); err != nil {
			t.Fatal(err)
		}
		return len(edits)
	}
	if n := apply(); n != 2 {
		t.Fatalf("first run edited %d files", n)
	}
	backup, _ := os.ReadFile(filepath.Join(dir, "config.json.orig"))
	if string(backup) != string(orig) {
		t.Fatal(".orig is not the original")
	}
	if n := apply(); n != 0 {
		t.Fatalf("second run edited %d files: not idempotent", n)
	}
}

func TestOutputDirectoryIsNewAndComplete(t *testing.T) {
	src := gemmaDir(t, "<eos>")
	os.WriteFile(filepath.Join(src, "model.safetensors"), []byte("weights"), 0o644)
	dst := filepath.Join(t.TempDir(), "fixed")
	edits, _ := PlanConfig(src, ConfigOptions{})
	out, err := NewOutput(src, dst, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		out.WriteBytes(e.Name, e.New)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Fatal("output visible before Commit")
	}
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(dst, n)); err != nil {
			t.Fatalf("missing %s", n)
		}
	}
	srcCfg, _ := os.ReadFile(filepath.Join(src, "config.json"))
	if !strings.Contains(string(srcCfg), "106") {
		t.Fatal("input was modified")
	}
	if _, err := NewOutput(src, dst, false); err == nil {
		t.Fatal("reused an existing output directory")
	}
	if _, err := NewOutput(src, src, false); err == nil {
		t.Fatal("-o equal to the input was accepted")
	}
}

func TestRefusesStubConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), nil, 0o644)
	_, err := PlanConfig(dir, ConfigOptions{})
	if err == nil || !strings.Contains(err.Error(), "empty (0 bytes)") {
		t.Fatalf("0-byte config: %v", err)
	}
}
