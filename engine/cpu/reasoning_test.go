package cpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/toolcall"
	"github.com/edgectl/edgectl/format/safetensors"
)

// templatedRandom is a random qwen3-shaped model under a real template,
// with token 5 (<|box_start|>, special) renamed to marker when given.
func templatedRandom(t *testing.T, template, marker string) *model {
	t.Helper()
	dir := t.TempDir()
	writeRandomLlama(t, dir, "qwen3", safetensors.F16)
	src, err := os.ReadFile(filepath.Join("../../format/chattemplate/testdata/templates", template))
	if err != nil {
		t.Skip(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644))
	longContext(t, dir)
	if marker != "" {
		for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			must(t, err)
			must(t, os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(string(b), "<|box_start|>", marker)), 0o644))
		}
	}
	return loadModel(t, dir)
}

// harmony's channel tokens keep their text in a chat answer whether or
// not tools are offered: serve reads the analysis channel as thinking.
func TestHarmonyMarkersKeptWithoutTools(t *testing.T) {
	m := templatedRandom(t, "openai-gpt-oss-120b.jinja", "<|channel|>")
	if toolcall.DetectThinking(m.tmpl.Source()) != toolcall.ThinkHarmony {
		t.Fatal("the gpt-oss template was not loaded")
	}
	s := &session{m: m}
	keep, con, err := s.toolSetup(engine.Request{Messages: []engine.Message{{Role: "user", Content: "hi"}}})
	must(t, err)
	if !keep[5] || con != nil {
		t.Fatalf("keep %v, matcher %v: want <|channel|> (5) kept and no grammar", keep, con)
	}
	if keep, _, _ := s.toolSetup(engine.Request{Prompt: "raw"}); keep != nil {
		t.Errorf("a raw prompt keeps %v; want nothing kept", keep)
	}
}

// TemplateVars reach the chat template: Qwen3's enable_thinking false
// writes an empty <think> block after the generation prompt.
func TestTemplateVarsReachTheTemplate(t *testing.T) {
	m := templatedRandom(t, "Qwen-Qwen3-0.6B.jinja", "")
	s := &session{m: m}
	prompt := func(vars map[string]any) string {
		ids, err := s.prompt(context.Background(), engine.Request{Messages: []engine.Message{{Role: "user", Content: "hi"}},
			AddGenerationPrompt: true, TemplateVars: vars})
		must(t, err)
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(string(m.tok.Piece(id)))
		}
		return b.String()
	}
	on, off := prompt(nil), prompt(map[string]any{"enable_thinking": false})
	if strings.Contains(on, "</think>") || !strings.Contains(off, "</think>") {
		t.Errorf("prompt without vars %q, with enable_thinking false %q; want the empty block only in the second", on, off)
	}
}
