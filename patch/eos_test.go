package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/hfconfig"
)

// chatModel copies testdata/chat-eos/NAME (see its README) into a temp
// directory: Qwen3 gets the repository's qwen3-tokenizer files, Llama's
// vocabulary is padded to its real size so its special ids are dense.
func chatModel(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	copyDir(t, filepath.Join("testdata", "chat-eos", name), dir)
	switch name {
	case "qwen3":
		src := filepath.Join("..", "testdata", "models", "qwen3-tokenizer")
		for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"} {
			copyFile(t, filepath.Join(src, f), filepath.Join(dir, f))
		}
	case "llama-3.2-1b-instruct":
		padVocab(t, filepath.Join(dir, "tokenizer.json"), 128000)
	}
	return dir
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// padVocab adds filler tokens to model.vocab for every id below n it lacks.
func padVocab(t *testing.T, path string, n int) {
	t.Helper()
	var doc map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	vocab := doc["model"].(map[string]any)["vocab"].(map[string]any)
	used := map[int]bool{}
	for _, id := range vocab {
		used[int(id.(float64))] = true
	}
	for id := range n {
		if !used[id] {
			vocab[fmt.Sprintf("filler%d", id)] = id
		}
	}
	out, _ := json.Marshal(doc)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// removeTemplate turns a chat checkpoint into a base model: no template.
func removeTemplate(t *testing.T, dir string) {
	t.Helper()
	os.Remove(filepath.Join(dir, "chat_template.jinja"))
	p := filepath.Join(dir, "tokenizer_config.json")
	var doc map[string]any
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "chat_template")
	out, _ := json.Marshal(doc)
	os.WriteFile(p, out, 0o644)
}

// eosEdits plans patch config and returns the new eos of each edited file
// with its change.
func eosEdits(t *testing.T, dir string, opts ConfigOptions) map[string]Change {
	t.Helper()
	edits, err := PlanConfig(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Change{}
	for _, e := range edits {
		cfg, err := hfconfig.Parse(e.New, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range e.Changes {
			if c.Key != "eos_token_id" {
				continue
			}
			if cfg.EosIsArray || len(cfg.EosTokenID) != 1 || cfg.EosTokenID[0] != c.New {
				t.Fatalf("%s: written eos %v, change says %v", e.Name, cfg.EosTokenID, c.New)
			}
			got[e.Name] = c
		}
	}
	return got
}

func TestEndOfTurnOfChatModels(t *testing.T) {
	for _, c := range []struct {
		model string
		token string
		id    int
	}{
		{"gemma-3-1b-it", "<end_of_turn>", 106},
		{"llama-3.2-1b-instruct", "<|eot_id|>", 128009},
		{"qwen3", "<|im_end|>", 2},
	} {
		t.Run(c.model, func(t *testing.T) {
			eot, err := FindEndOfTurn(chatModel(t, c.model))
			if err != nil {
				t.Fatal(err)
			}
			if eot.Token != c.token || eot.ID != c.id {
				t.Fatalf("end of turn %+v, want %s (%d)", eot, c.token, c.id)
			}
		})
	}
	dir := chatModel(t, "gemma-3-1b-it")
	removeTemplate(t, dir)
	if _, err := FindEndOfTurn(dir); !errors.Is(err, ErrNoTemplate) {
		t.Fatalf("base model: %v", err)
	}
}

func TestPatchConfigPicksEndOfTurn(t *testing.T) {
	for _, c := range []struct {
		model string
		files []string // files whose eos changes
		want  int
		token string
	}{
		// Gemma's tokenizer eos is <eos> (1): the old rule kept 1 and the
		// gateway never stopped.
		{"gemma-3-1b-it", []string{"config.json", "generation_config.json"}, 106, "<end_of_turn>"},
		{"llama-3.2-1b-instruct", []string{"config.json", "generation_config.json"}, 128009, "<|eot_id|>"},
		// Qwen3's config.json already holds the single id 151645 (here 2).
		{"qwen3", []string{"generation_config.json"}, 2, "<|im_end|>"},
	} {
		t.Run(c.model, func(t *testing.T) {
			got := eosEdits(t, chatModel(t, c.model), ConfigOptions{})
			if len(got) != len(c.files) {
				t.Fatalf("edited %v, want %v", got, c.files)
			}
			for _, f := range c.files {
				ch := got[f]
				if ch.New != c.want || ch.Rule != RuleTemplate || !strings.Contains(ch.Reason, fmt.Sprintf("%q, id %d", c.token, c.want)) {
					t.Fatalf("%s: %+v", f, ch)
				}
			}
		})
	}
}

func TestBaseModelsKeepTheOldRule(t *testing.T) {
	for _, c := range []struct {
		model string
		want  int
		rule  string
	}{
		{"gemma-3-1b-it", 1, RuleTokenizer},
		{"llama-3.2-1b-instruct", 128009, RuleTokenizer},
	} {
		t.Run(c.model, func(t *testing.T) {
			dir := chatModel(t, c.model)
			removeTemplate(t, dir)
			for f, ch := range eosEdits(t, dir, ConfigOptions{}) {
				if ch.New != c.want || ch.Rule != c.rule || !strings.Contains(ch.Reason, "no chat template") {
					t.Fatalf("%s: %+v", f, ch)
				}
			}
		})
	}
	// A base model with a single eos (Llama-3.2-1B: 128001) is left alone.
	dir := chatModel(t, "llama-3.2-1b-instruct")
	removeTemplate(t, dir)
	for _, f := range []string{"config.json", "generation_config.json"} {
		p := filepath.Join(dir, f)
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(b), "[\n    128001,\n    128008,\n    128009\n  ]", "128001", 1)), 0o644)
	}
	if got := eosEdits(t, dir, ConfigOptions{}); len(got) != 0 {
		t.Fatalf("single-eos base model edited: %+v", got)
	}
}

func TestEndOfTurnNotAnEOSKeepsTheOldRule(t *testing.T) {
	dir := chatModel(t, "gemma-3-1b-it")
	for _, f := range []string{"config.json", "generation_config.json"} {
		p := filepath.Join(dir, f)
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(b), "106", "2", 1)), 0o644)
	}
	for f, ch := range eosEdits(t, dir, ConfigOptions{}) {
		if ch.New != 1 || ch.Rule != RuleTokenizer || !strings.Contains(ch.Reason, `end-of-turn "<end_of_turn>" (id 106) is not among them`) {
			t.Fatalf("%s: %+v", f, ch)
		}
	}
}

func TestEOSFlagOverridesAndFixesASingleID(t *testing.T) {
	dir := chatModel(t, "gemma-3-1b-it")
	one := 1
	for f, ch := range eosEdits(t, dir, ConfigOptions{EOS: &one}) {
		if ch.New != 1 || ch.Rule != RuleFlag {
			t.Fatalf("%s: %+v", f, ch)
		}
	}
	// A config.json someone reduced to the single id 1 by hand, while
	// generation_config.json still lists [1, 106]: the template rule
	// rewrites the single id too.
	setEOS := func(file, eos string) {
		p := filepath.Join(dir, file)
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(b), "[\n    1,\n    106\n  ]", eos, 1)), 0o644)
	}
	setEOS("config.json", "1")
	got := eosEdits(t, dir, ConfigOptions{})
	if len(got) != 2 || got["config.json"].New != 106 || got["config.json"].Old != 1 || got["config.json"].Rule != RuleTemplate {
		t.Fatalf("single eos 1 with <end_of_turn> turns: %+v", got)
	}
	// With 106 listed nowhere, the old rule keeps 1, and --eos 106 (the
	// fix doctor prints) is accepted because the template names it.
	setEOS("generation_config.json", "1")
	if got := eosEdits(t, dir, ConfigOptions{}); len(got) != 0 {
		t.Fatalf("weaker rules rewrote a single id: %+v", got)
	}
	eot := 106
	if got := eosEdits(t, dir, ConfigOptions{EOS: &eot}); got["config.json"].New != 106 || got["config.json"].Rule != RuleFlag {
		t.Fatalf("--eos 106: %+v", got)
	}
	bad := 7
	if _, err := PlanConfig(dir, ConfigOptions{EOS: &bad}); err == nil || !strings.Contains(err.Error(), "end-of-turn") {
		t.Fatalf("--eos 7: %v", err)
	}
}
