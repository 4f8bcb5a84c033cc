package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/doctor"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// gemmaChat writes a small Gemma 3 checkpoint (real weights layout) with
// google/gemma-3-1b-it's generation config, tokenizer files and chat
// template (patch/testdata/chat-eos), config.json eos_token_id = cfgEOS and
// generation_config.json's eos replaced by genEOS when not empty.
func gemmaChat(t *testing.T, cfgEOS any, genEOS string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gemma-3-1b-it")
	if err := testmodel.Write(dir, testmodel.Spec{ModelType: "gemma3", Vocab: 262, Config: map[string]any{"eos_token_id": cfgEOS, "bos_token_id": 2, "kv_cache_len": 2047}}); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "..", "patch", "testdata", "chat-eos", "gemma-3-1b-it")
	for _, f := range []string{"generation_config.json", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "generation_config.json" && genEOS != "" {
			b = []byte(strings.Replace(string(b), "[\n    1,\n    106\n  ]", genEOS, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func findingByID(r doctor.Report, id string) *doctor.Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

// runFix runs a finding's fix command ("edgectl patch config …") in-process.
func runFix(t *testing.T, fix string) {
	t.Helper()
	args := strings.Fields(fix)
	if len(args) < 2 || args[0] != "edgectl" {
		t.Fatalf("fix %q is not an edgectl command", fix)
	}
	if code, _, stderr := runCLI(t, args[1:]...); code != 0 {
		t.Fatalf("%s: exit %d: %s", fix, code, stderr)
	}
}

func TestPatchConfigGemmaChatPicksEndOfTurn(t *testing.T) {
	dir := gemmaChat(t, []int{1, 106}, "")
	fixed := dir + "-fixed"
	code, _, stderr := runCLI(t, "patch", "config", dir, "-o", fixed)
	if code != 0 || !strings.Contains(stderr, "eos_token_id [1 106] → 106 (rule chat-template: the chat template closes assistant turns with \"<end_of_turn>\", id 106") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	code, out, _ := runCLI(t, "patch", "config", dir, "--dry-run", "--json")
	var res struct {
		Changes []struct {
			File string `json:"file"`
			New  int    `json:"new"`
			Rule string `json:"rule"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || len(res.Changes) != 2 {
		t.Fatalf("--json: exit %d %q %v", code, out, err)
	}
	for _, c := range res.Changes {
		if c.New != 106 || c.Rule != "chat-template" {
			t.Fatalf("--json change %+v", c)
		}
	}
	// --eos still overrides.
	code, _, stderr = runCLI(t, "patch", "config", dir, "--dry-run", "--eos", "1")
	if code != 0 || !strings.Contains(stderr, "→ 1 (rule --eos") {
		t.Fatalf("--eos 1: exit %d %s", code, stderr)
	}
	// doctor: the array is fixable, and after the fix nothing about eos.
	_, r := doctorJSON(t, dir)
	if findingByID(r, "eos-array") == nil || findingByID(r, "eos-end-of-turn") != nil {
		t.Fatalf("before: %+v", r.Findings)
	}
	_, r = doctorJSON(t, fixed)
	if f := findingByID(r, "eos-array"); f != nil {
		t.Fatalf("after patch config: %+v", f)
	}
	if f := findingByID(r, "eos-end-of-turn"); f != nil {
		t.Fatalf("after patch config: %+v", f)
	}
}

func TestDoctorSingleEOSNotEndOfTurn(t *testing.T) {
	for _, c := range []struct {
		name     string
		genEOS   string
		severity doctor.Severity
	}{
		// generation_config.json still lists 106: patch config's template
		// rule applies.
		{"106 listed", "", doctor.Fixable},
		// 106 listed nowhere: a warning, fixed with --eos 106.
		{"106 not listed", "1", doctor.Warning},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := gemmaChat(t, 1, c.genEOS)
			_, r := doctorJSON(t, dir)
			f := findingByID(r, "eos-end-of-turn")
			if f == nil || f.Severity != c.severity || !strings.Contains(f.Message, `"<end_of_turn>" (106)`) || !strings.HasSuffix(f.Fix, "--eos 106") {
				t.Fatalf("finding %+v in %+v", f, r.Findings)
			}
			runFix(t, f.Fix)
			_, r = doctorJSON(t, dir+"-fixed")
			for _, id := range []string{"eos-end-of-turn", "eos-array"} {
				if f := findingByID(r, id); f != nil {
					t.Fatalf("after %s: %+v", f.Fix, f)
				}
			}
		})
	}
	// A base model (no template) with a single eos is not flagged.
	dir := gemmaChat(t, 1, "1")
	p := filepath.Join(dir, "tokenizer_config.json")
	var tc map[string]any
	b, _ := os.ReadFile(p)
	json.Unmarshal(b, &tc)
	delete(tc, "chat_template")
	b, _ = json.Marshal(tc)
	os.WriteFile(p, b, 0o644)
	if _, r := doctorJSON(t, dir); findingByID(r, "eos-end-of-turn") != nil || findingByID(r, "chat-template-eos") != nil {
		t.Fatalf("base model: %+v", r.Findings)
	}
}
