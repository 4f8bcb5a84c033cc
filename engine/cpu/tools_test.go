package cpu

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/toolcall"
	"github.com/edgectl/edgectl/format/chattemplate"
	"github.com/edgectl/edgectl/format/safetensors"
)

const timeTool = `[{"type":"function","function":{"name":"get_time","description":"Time in a zone","parameters":{"type":"object","properties":{"zone":{"type":"string","minLength":1,"maxLength":12}},"required":["zone"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"ping","parameters":{"type":"object","properties":{}}}}]`

// toolAnswer generates with tools and parses the answer in format f: its
// text and calls.
func toolAnswer(t *testing.T, m *model, f toolcall.Format, req engine.Request) (string, []toolcall.Call, []int, engine.Result) {
	t.Helper()
	s, err := m.NewSession()
	must(t, err)
	defer s.Close()
	p := toolcall.NewParser(f)
	var text strings.Builder
	var calls []toolcall.Call
	var ids []int
	add := func(evs []toolcall.Event) {
		for _, e := range evs {
			switch e.Kind {
			case toolcall.Text:
				text.WriteString(e.Text)
			case toolcall.End:
				calls = append(calls, e.Call)
			}
		}
	}
	res, err := s.Generate(context.Background(), req, func(tk engine.Token) error {
		ids = append(ids, tk.ID)
		add(p.Push(tk.Text))
		return nil
	})
	must(t, err)
	add(p.Flush())
	return text.String(), calls, ids, res
}

func checkTimeCall(t *testing.T, what string, calls []toolcall.Call, text string) {
	t.Helper()
	if len(calls) != 1 || !calls[0].Valid || calls[0].Name != "get_time" || text != "" {
		t.Fatalf("%s: text %q, calls %+v", what, text, calls)
	}
	var args struct{ Zone *string }
	dec := json.NewDecoder(strings.NewReader(calls[0].Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil || args.Zone == nil || utf8.RuneCountInString(*args.Zone) < 1 || utf8.RuneCountInString(*args.Zone) > 12 {
		t.Errorf("%s: arguments %s do not validate (%v)", what, calls[0].Arguments, err)
	}
}

// A Qwen3 model (random weights; the real Qwen3 tokenizer, where
// <tool_call> is an ordinary added token, and chat template) renders the
// tools and the conversation's calls through its template, and with
// tool_choice naming a function answers one Hermes call to it whose
// arguments validate, ending there, whatever the seed.
func TestQwen3ToolCall(t *testing.T) {
	dir := t.TempDir()
	writeRandomLlama(t, dir, "qwen3", safetensors.F16)
	longContext(t, dir)
	m := loadModel(t, dir)
	msgs := []engine.Message{{Role: "user", Content: "Time in Oslo?"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{{ID: "call_1", Function: engine.FunctionCall{Name: "ping", Arguments: json.RawMessage(`{}`)}}}},
		{Role: "tool", ToolCallID: "call_1", Content: "pong"}}
	rendered, err := m.tmpl.Render(context.Background(), msgs, chattemplate.Vars{BOSToken: m.tok.BOSToken(), EOSToken: m.tok.EOSToken(),
		AddGenerationPrompt: true, Extra: map[string]any{"tools": json.RawMessage(timeTool)}})
	must(t, err)
	if !strings.Contains(rendered, `"name": "get_time"`) || !strings.Contains(rendered, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>") ||
		!strings.Contains(rendered, "<tool_response>\npong\n</tool_response>") {
		t.Fatalf("the template did not render the tools and the call: %q", rendered)
	}
	for seed := range int64(6) {
		temp := 1.0
		req := engine.Request{Messages: msgs, AddGenerationPrompt: true, MaxTokens: 80,
			Sampling: engine.Sampling{Temperature: &temp, Seed: &seed},
			Tools:    &engine.Tools{Defs: json.RawMessage(timeTool), Choice: engine.ToolFunction, Name: "get_time"}}
		text, calls, _, res := toolAnswer(t, m, toolcall.Hermes, req)
		if want := len(m.tok.Encode(rendered, false)); res.PromptTokens != want {
			t.Errorf("prompt %d tokens, want %d (the template's rendering with tools)", res.PromptTokens, want)
		}
		if res.FinishReason != engine.FinishStop {
			t.Errorf("seed %d: finish %q: the call should end generation", seed, res.FinishReason)
		}
		checkTimeCall(t, "qwen3", calls, text)
	}
	// tool_choice none: the template gets no tools.
	s, _ := m.NewSession()
	res, err := s.Generate(context.Background(), engine.Request{Messages: msgs[:1], AddGenerationPrompt: true, MaxTokens: 1, Sampling: greedy(),
		Tools: &engine.Tools{Defs: json.RawMessage(timeTool), Choice: engine.ToolNone}}, func(engine.Token) error { return nil })
	must(t, err)
	plain, _ := m.tmpl.Render(context.Background(), msgs[:1], chattemplate.Vars{AddGenerationPrompt: true})
	if want := len(m.tok.Encode(plain, false)); res.PromptTokens != want {
		t.Errorf("tool_choice none: prompt %d tokens, want %d (no tools rendered)", res.PromptTokens, want)
	}
}

// Where a family's marker is a special token (Mistral's [TOOL_CALLS]),
// the forced call may use it, as the model was trained to, and its text
// stays in the answer for the parser: here the Qwen3 fixture's vocabulary
// with one special token renamed [TOOL_CALLS], and Mistral Nemo's
// template. Every seed's answer parses as one valid call.
func TestSpecialMarkerTokenKept(t *testing.T) {
	dir := t.TempDir()
	writeRandomLlama(t, dir, "qwen3", safetensors.F16)
	src, err := os.ReadFile("../../format/chattemplate/testdata/templates/mistralai-Mistral-Nemo-Instruct-2407.jinja")
	if err != nil {
		t.Skip(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644))
	longContext(t, dir)
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		must(t, err)
		b = []byte(strings.ReplaceAll(string(b), "<|box_start|>", "[TOOL_CALLS]")) // id 5, special
		must(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	m := loadModel(t, dir)
	if toolcall.Detect(m.tmpl.Source()) != toolcall.Mistral {
		t.Fatal("the Mistral template was not loaded")
	}
	const marker = 5
	if !m.tok.IsSpecial(marker) || string(m.tok.Piece(marker)) != "[TOOL_CALLS]" {
		t.Fatalf("token 5 is %q", m.tok.Piece(marker))
	}
	tools := &engine.Tools{Defs: json.RawMessage(timeTool), Choice: engine.ToolFunction, Name: "get_time"}
	s := &session{m: m}
	keep, con, err := s.toolSetup(engine.Request{Tools: tools})
	must(t, err)
	if !keep[marker] || con == nil || con.Allowed()[0]>>marker&1 == 0 {
		t.Fatalf("the marker token is not kept (%v) or not allowed first", keep)
	}
	used := 0
	for seed := range int64(8) {
		temp := 1.0
		text, calls, ids, _ := toolAnswer(t, m, toolcall.Mistral, engine.Request{Messages: []engine.Message{{Role: "user", Content: "Time in Oslo?"}},
			AddGenerationPrompt: true, MaxTokens: 80, Sampling: engine.Sampling{Temperature: &temp, Seed: &seed}, Tools: tools})
		checkTimeCall(t, "mistral", calls, text)
		if len(ids) > 0 && ids[0] == marker {
			used++
		}
	}
	t.Logf("%d of 8 answers began with the [TOOL_CALLS] token, the others spelled it", used)
}

// longContext gives writeRandomLlama's model 1024 positions: Qwen3's tool
// prompt is longer than its 256.
func longContext(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	must(t, err)
	var c map[string]any
	must(t, json.Unmarshal(b, &c))
	c["max_position_embeddings"] = 1024
	b, _ = json.Marshal(c)
	must(t, os.WriteFile(p, b, 0o644))
}
