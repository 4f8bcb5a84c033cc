package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// TestRendersLikeJinja2 compares against testdata/expected.json, written by
// Python's jinja2 (testdata/render_ref.py) with transformers' settings.
func TestRendersLikeJinja2(t *testing.T) {
	var cases map[string]struct {
		Template            string           `json:"template"`
		AddGenerationPrompt bool             `json:"add_generation_prompt"`
		Messages            []engine.Message `json:"messages"`
	}
	var want map[string]string
	readJSON(t, "testdata/cases.json", &cases)
	readJSON(t, "testdata/expected.json", &want)
	for name, c := range cases {
		src, err := os.ReadFile(filepath.Join("testdata", c.Template))
		if err != nil {
			t.Fatal(err)
		}
		tm, err := Parse(string(src))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tm.Render(c.Messages, Vars{AddGenerationPrompt: c.AddGenerationPrompt})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want[name] {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want[name])
		}
	}
}

// The fixture's own file must be the template this test checks.
func TestFixtureTemplateIsTested(t *testing.T) {
	a, err1 := os.ReadFile("../../testdata/models/qwen3-tokenizer/chat_template.jinja")
	b, err2 := os.ReadFile("testdata/qwen3.jinja")
	if err1 != nil {
		t.Skip("fixture not present")
	}
	if err2 != nil || string(a) != string(b) {
		t.Fatal("testdata/qwen3.jinja differs from the fixture's chat_template.jinja; copy it again and rerun render_ref.py")
	}
}

func TestRaiseException(t *testing.T) {
	tm, err := Parse(`{% if messages[0].role != 'user' %}{{ raise_exception('first message must be from the user') }}{% endif %}ok`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tm.Render([]engine.Message{{Role: "assistant", Content: "x"}}, Vars{})
	if err == nil || !strings.Contains(err.Error(), "first message must be from the user") {
		t.Fatalf("err = %v", err)
	}
	if out, err := tm.Render([]engine.Message{{Role: "user", Content: "x"}}, Vars{}); err != nil || out != "ok" {
		t.Fatalf("%q %v", out, err)
	}
}

func TestBOSVariable(t *testing.T) {
	tm, err := Parse(`{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.Render([]engine.Message{{Role: "user", Content: "hi"}}, Vars{BOSToken: "<s>", AddGenerationPrompt: true})
	if err != nil || out != "<s>[user]hi[assistant]" {
		t.Fatalf("%q %v", out, err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
