package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// The thinking a server splits off comes as Token.Reasoning, whichever
// name it uses: reasoning_content (llama.cpp's server), reasoning (vLLM,
// Ollama's /v1), both with the same text (a server in the middle of the
// rename: not doubled); a reasoning that is an object is no thinking
// text. The request's controls and history thinking go the other way.
func TestUpstreamReasoningFields(t *testing.T) {
	var sent map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		json.NewDecoder(r.Body).Decode(&sent)
		sse(w,
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"a "}}]}`,
			`{"choices":[{"index":0,"delta":{"reasoning":"b "}}]}`,
			`{"choices":[{"index":0,"delta":{"reasoning_content":"c","reasoning":"c"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"x","reasoning":{"effort":"low"}}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `[DONE]`)
	}))
	defer srv.Close()
	m := load(t, Config{Name: "r", URL: srv.URL})
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	on := false
	req := engine.Request{Messages: []engine.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a", ReasoningContent: "why"}, {Role: "user", Content: "q2"}},
		Think: &engine.Think{On: &on, Effort: "low", Format: "deepseek", Vars: map[string]any{"enable_thinking": true}}}
	var thought, text strings.Builder
	if _, err := s.Generate(context.Background(), req, func(tok engine.Token) error {
		thought.WriteString(tok.Reasoning)
		text.WriteString(tok.Text)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if thought.String() != "a b c" || text.String() != "x" {
		t.Errorf("reasoning %q, text %q; want %q, %q", thought.String(), text.String(), "a b c", "x")
	}
	// The client's own variables have the last say (enable_thinking true
	// over think's false).
	if string(sent["reasoning_format"]) != `"deepseek"` || string(sent["reasoning_effort"]) != `"low"` ||
		string(sent["chat_template_kwargs"]) != `{"enable_thinking":true,"reasoning_effort":"low"}` {
		t.Errorf("sent reasoning_format %s, reasoning_effort %s, chat_template_kwargs %s", sent["reasoning_format"], sent["reasoning_effort"], sent["chat_template_kwargs"])
	}
	if !strings.Contains(string(sent["messages"]), `"role":"assistant","content":"a","reasoning_content":"why"`) {
		t.Errorf("sent messages %s; want the assistant turn's reasoning_content", sent["messages"])
	}
}
