package cpu

import (
	"encoding/json"
	"fmt"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/grammar"
	"github.com/edgectl/edgectl/engine/toolcall"
)

// Tool calls on the CPU engine: the request's tools go to the chat
// template, a required call is a grammar over the family's call format
// (engine/toolcall), and the family's marker tokens keep their text in
// the answer so serve's parser sees them. Parsing the answer is serve's.

// toolFormat is the format the model's template writes calls in, when
// req offers tools (an ErrInvalidRequest when it has none).
func (m *model) toolFormat(req engine.Request) (toolcall.Format, error) {
	src := ""
	if m.tmpl != nil {
		src = m.tmpl.Source()
	}
	f, err := toolcall.ForTemplate(m.info.Name, src, req.Tools)
	if err != nil {
		return f, fmt.Errorf("%w: %w", engine.ErrInvalidRequest, err)
	}
	return f, nil
}

// toolTemplate is what the template gets for req's tools: the `tools`
// variable (nil: none offered) and the conversation with call ids its
// family accepts (a history may hold calls whether or not tools are
// offered now).
func (m *model) toolTemplate(req engine.Request) (map[string]any, []engine.Message, error) {
	if !req.Tools.Offered() {
		for _, msg := range req.Messages {
			if len(msg.ToolCalls) > 0 || msg.Role == "tool" {
				return nil, toolcall.Prepare(toolcall.Detect(m.tmpl.Source()), nil, req.Messages), nil
			}
		}
		return nil, req.Messages, nil
	}
	f, err := m.toolFormat(req)
	if err != nil {
		return nil, nil, err
	}
	vars := map[string]any{"tools": json.RawMessage(req.Tools.Defs)}
	if b := toolcall.BuiltinTools(f, m.tmpl.Source(), req.Tools.Defs); len(b) > 0 {
		names := make([]any, len(b))
		for i, n := range b {
			names[i] = n
		}
		vars["builtin_tools"] = names // Llama 3.1: "Tools: brave_search" in the system turn
	}
	return vars, toolcall.Prepare(f, req.Tools, req.Messages), nil
}

// toolSetup is, for a request offering tools, the special tokens whose
// text the answer keeps (the family's markers) and, when a call is
// required, the matcher that makes the answer one.
func (s *session) toolSetup(req engine.Request) (_ map[int]bool, _ *grammar.Matcher, err error) {
	f := toolcall.None
	if !req.Tools.Offered() {
		// harmony's channels say which text is reasoning (serve splits
		// it off, serve/reasoning.go) whether or not tools are offered.
		if len(req.Messages) == 0 || s.m.tmpl == nil || toolcall.DetectThinking(s.m.tmpl.Source()) != toolcall.ThinkHarmony {
			return nil, nil, nil
		}
		f = toolcall.Harmony
	} else if f, err = s.m.toolFormat(req); err != nil {
		return nil, nil, err
	}
	keep := map[int]bool{}
	var specials []int
	for _, mk := range f.Markers() {
		if ids := s.m.tok.Encode(mk, false); len(ids) == 1 && s.m.tok.IsSpecial(ids[0]) {
			keep[ids[0]] = true
			specials = append(specials, ids[0])
		}
	}
	if !req.Tools.Forced() {
		return keep, nil, nil
	}
	if req.Format != nil {
		return nil, nil, fmt.Errorf("%w: tool_choice %q and response_format both constrain the answer; send one of them", engine.ErrInvalidRequest, req.Tools.Choice)
	}
	g, err := toolcall.Grammar(f, req.Tools)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", engine.ErrInvalidRequest, err)
	}
	con := grammar.NewMatcher(g, grammar.VocabOf(s.m.tok), s.m.arch.eos)
	for _, id := range specials {
		con.AllowSpecial(id, s.m.tok.Piece(id))
	}
	return keep, con, nil
}
