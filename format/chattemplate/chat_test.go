package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/chattemplate/jinja"
)

// fixedNow is render_ref.py's FIXED_NOW.
var fixedNow = time.Date(2024, 7, 26, 14, 5, 9, 0, time.UTC)

type refConversation struct {
	Messages json.RawMessage            `json:"messages"`
	Tools    json.RawMessage            `json:"tools"`
	Vars     map[string]json.RawMessage `json:"vars"`
}

type refSpec struct {
	Conversations map[string]refConversation `json:"conversations"`
	Templates     map[string]struct {
		BOS           string                     `json:"bos_token"`
		EOS           string                     `json:"eos_token"`
		Conversations []string                   `json:"conversations"`
		Vars          map[string]json.RawMessage `json:"vars"`
	} `json:"templates"`
	Cases map[string]struct {
		Template            string                     `json:"template"`
		Source              string                     `json:"source"`
		Conversation        string                     `json:"conversation"`
		Messages            json.RawMessage            `json:"messages"`
		AddGenerationPrompt bool                       `json:"add_generation_prompt"`
		BOS                 string                     `json:"bos_token"`
		EOS                 string                     `json:"eos_token"`
		Vars                map[string]json.RawMessage `json:"vars"`
	} `json:"cases"`
}

// refCase is one render of a real chat template and what Python's jinja2
// (with transformers' environment) produced for it.
type refCase struct {
	name, src string
	messages  json.RawMessage
	vars      Vars
	want      json.RawMessage // a string, or {"error": "..."}
}

func loadRefCases(t testing.TB) []refCase {
	t.Helper()
	var spec refSpec
	var want map[string]json.RawMessage
	readJSON(t, "testdata/cases.json", &spec)
	readJSON(t, "testdata/expected.json", &want)
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join("testdata", path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	extra := func(conv refConversation, more ...map[string]json.RawMessage) map[string]any {
		m := map[string]any{}
		if len(conv.Tools) > 0 {
			m["tools"] = conv.Tools
		}
		for _, vs := range append([]map[string]json.RawMessage{conv.Vars}, more...) {
			for k, v := range vs {
				m[k] = v
			}
		}
		return m
	}
	var cases []refCase
	for name, c := range spec.Cases {
		src := c.Source
		if c.Template != "" {
			src = read(c.Template)
		}
		conv := refConversation{Messages: c.Messages}
		if c.Conversation != "" {
			conv = spec.Conversations[c.Conversation]
		}
		cases = append(cases, refCase{name: name, src: src, messages: conv.Messages, want: want[name],
			vars: Vars{BOSToken: c.BOS, EOSToken: c.EOS, AddGenerationPrompt: c.AddGenerationPrompt, Extra: extra(conv, c.Vars), Now: fixedNow}})
	}
	for path, tm := range spec.Templates {
		src := read(path)
		for _, cn := range tm.Conversations {
			conv, ok := spec.Conversations[cn]
			if !ok {
				t.Fatalf("%s: no conversation %s", path, cn)
			}
			for _, agp := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/agp=%v", path, cn, agp)
				cases = append(cases, refCase{name: name, src: src, messages: conv.Messages, want: want[name],
					vars: Vars{BOSToken: tm.BOS, EOSToken: tm.EOS, AddGenerationPrompt: agp, Extra: extra(conv, tm.Vars), Now: fixedNow}})
			}
		}
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].name < cases[j].name })
	if len(cases) != len(want) {
		t.Fatalf("%d cases but %d expected outputs; rerun testdata/render_ref.py", len(cases), len(want))
	}
	return cases
}

// TestRendersLikeJinja2 renders real chat templates (testdata/templates,
// see its README) over conversations with system prompts, several turns,
// tools and tool calls, both ways of add_generation_prompt, and compares
// byte for byte with testdata/expected.json, written by Python's jinja2 in
// transformers' configuration (testdata/render_ref.py). Where Python fails
// (raise_exception, a template that does not take a shape of message), the
// Go render must fail too.
func TestRendersLikeJinja2(t *testing.T) {
	for _, c := range loadRefCases(t) {
		tm, err := Parse(c.src)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		msgs, err := jinja.FromJSON(c.messages)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := tm.render(context.Background(), msgs, c.vars)
		var want string
		if json.Unmarshal(c.want, &want) != nil {
			var e struct{ Error string }
			if json.Unmarshal(c.want, &e) != nil || e.Error == "" {
				t.Fatalf("%s: no expected output; rerun testdata/render_ref.py", c.name)
			}
			if err == nil {
				t.Errorf("%s: rendered %q, but jinja2 fails: %s", c.name, got, e.Error)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, want)
		}
	}
}

// The public Render (Message) gives what the reference gives for every
// conversation of string contents: plain turns, and tool definitions,
// assistant tool calls (arguments as an object or a string) and tool
// results.
func TestRenderMessagesLikeReference(t *testing.T) {
	n, tools := 0, 0
	for _, c := range loadRefCases(t) {
		var msgs []Message
		if json.Unmarshal(c.messages, &msgs) != nil {
			continue
		}
		withTools := strings.Contains(string(c.messages), "tool_calls") || c.vars.Extra["tools"] != nil
		var want string
		if json.Unmarshal(c.want, &want) != nil {
			continue
		}
		tm, err := Parse(c.src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tm.Render(context.Background(), msgs, c.vars)
		if err != nil || got != want {
			t.Errorf("%s: %q %v", c.name, got, err)
		}
		n++
		if withTools {
			tools++
		}
	}
	t.Logf("%d cases through Render, %d with tools", n, tools)
	if n < 100 || tools < 50 {
		t.Fatalf("only %d cases (%d with tools) went through Render", n, tools)
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
	_, err = tm.Render(context.Background(), []Message{{Role: "assistant", Content: "x"}}, Vars{})
	if err == nil || err.Error() != "chat template: first message must be from the user" || !errors.Is(err, ErrRaised) {
		t.Fatalf("err = %v", err)
	}
	if out, err := tm.Render(context.Background(), []Message{{Role: "user", Content: "x"}}, Vars{}); err != nil || out != "ok" {
		t.Fatalf("%q %v", out, err)
	}
}

func TestBOSVariable(t *testing.T) {
	tm, err := Parse(`{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.Render(context.Background(), []Message{{Role: "user", Content: "hi"}}, Vars{BOSToken: "<s>", AddGenerationPrompt: true})
	if err != nil || out != "<s>[user]hi[assistant]" {
		t.Fatalf("%q %v", out, err)
	}
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
