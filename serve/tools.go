package serve

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/toolcall"
	"github.com/edgectl/edgectl/format/chattemplate"
)

// Tool calls: OpenAI's tools and tool_choice and Ollama's tools become an
// engine.Tools; lanefields.go says which lane applies, forwards or
// refuses them. On the cpu lane the model's chat template must write
// calls in a format engine/toolcall knows (leaseTools), and the answer is
// parsed back into calls as it streams (toolStream); an HTTP upstream's
// calls come parsed. See docs/serve.md "Tool calls".

// chatTools reads OpenAI's tools and tool_choice: "none", "auto" (the
// default), "required", or {"type":"function","function":{"name":…}}.
// No tools (absent or []) with none or auto asks for nothing: nil.
func chatTools(tools, choice json.RawMessage) (*engine.Tools, error) {
	t := &engine.Tools{Choice: engine.ToolAuto}
	if !absent(choice) {
		t.RawChoice = choice
		var s string
		if json.Unmarshal(choice, &s) == nil {
			switch s {
			case engine.ToolNone, engine.ToolAuto, engine.ToolRequired:
				t.Choice = s
			default:
				return nil, &api.FieldError{Field: "tool_choice", Msg: fmt.Sprintf(`tool_choice %q: want "none", "auto", "required" or {"type":"function","function":{"name":…}}`, s)}
			}
		} else {
			var c struct {
				Type     string `json:"type"`
				Function *struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if json.Unmarshal(choice, &c) != nil || c.Type != "function" || c.Function == nil || c.Function.Name == "" {
				return nil, &api.FieldError{Field: "tool_choice", Msg: fmt.Sprintf(`tool_choice: want "none", "auto", "required" or {"type":"function","function":{"name":…}}, not %s`, short(choice))}
			}
			t.Choice, t.Name = engine.ToolFunction, c.Function.Name
		}
	}
	if rawIs(tools, "[]") {
		if t.Forced() {
			return nil, &api.FieldError{Field: "tool_choice", Msg: fmt.Sprintf("tool_choice %s needs tools to choose from; send tools", short(choice))}
		}
		return nil, nil
	}
	defs, err := toolcall.ParseTools(tools)
	if err != nil {
		return nil, &api.FieldError{Field: "tools", Msg: err.Error()}
	}
	if t.Choice == engine.ToolFunction && !offers(defs, t.Name) {
		return nil, &api.FieldError{Field: "tool_choice", Msg: fmt.Sprintf("tool_choice names function %q, which tools does not offer", t.Name)}
	}
	t.Defs = tools
	return t, nil
}

func offers(defs []toolcall.Tool, name string) bool {
	for _, d := range defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

// ollamaTools reads Ollama's tools (OpenAI's shape) and edgectl's
// tool_choice extension (Ollama has none: its models decide).
func ollamaTools(tools, choice json.RawMessage) (*engine.Tools, error) {
	return chatTools(tools, choice)
}

// chatMessage is an OpenAI message (role already mapped) for the engine:
// its tool calls' arguments text becomes the object templates read.
func chatMessage(i int, role string, m api.ChatMessage) (engine.Message, error) {
	em := engine.Message{Role: role, Content: string(m.Content), ToolCallID: m.ToolCallID, ReasoningContent: m.ReasoningContent}
	if role == "tool" {
		em.Name = m.Name
	}
	for j, c := range m.ToolCalls {
		if c.Function.Name == "" {
			return em, &api.FieldError{Field: "messages", Msg: fmt.Sprintf("messages[%d].tool_calls[%d].function.name is required", i, j)}
		}
		em.ToolCalls = append(em.ToolCalls, engine.ToolCall{ID: c.ID, Type: "function",
			Function: engine.FunctionCall{Name: c.Function.Name, Arguments: chattemplate.ArgumentsOf(c.Function.Arguments)}})
	}
	return em, nil
}

// ollamaMessage is an Ollama message for the engine: tool calls with
// object arguments, a tool turn's tool_name as its Name.
func ollamaMessage(i int, m api.Message) (engine.Message, error) {
	em := engine.Message{Role: m.Role, Content: m.Content, Name: m.ToolName, ReasoningContent: m.Thinking}
	for j, c := range m.ToolCalls {
		args := bytes.TrimSpace(c.Function.Arguments)
		if len(args) == 0 || bytes.Equal(args, []byte("null")) {
			args = []byte("{}")
		}
		if c.Function.Name == "" || args[0] != '{' {
			return em, fmt.Errorf("messages[%d].tool_calls[%d]: want {\"function\":{\"name\":…,\"arguments\":{…}}} (arguments an object)", i, j)
		}
		em.ToolCalls = append(em.ToolCalls, engine.ToolCall{ID: c.ID, Type: "function",
			Function: engine.FunctionCall{Name: c.Function.Name, Arguments: json.RawMessage(args)}})
	}
	return em, nil
}

// checkTools, for the cpu lane, compiles the grammar a required call
// will run under: a parameters schema it cannot run is the client's to
// fix (the error names the tool and the keyword).
func checkTools(req engine.Request) error {
	if !req.Tools.Forced() {
		return nil
	}
	if req.Format != nil {
		return &api.FieldError{Field: "tool_choice", Msg: fmt.Sprintf("tool_choice %q and response_format both constrain the answer on the cpu lane; send one of them", req.Tools.Choice)}
	}
	if _, err := toolcall.Grammar(toolcall.Hermes, req.Tools); err != nil { // the schemas are the same in every family's wrapper
		return &api.FieldError{Field: "tools", Msg: err.Error()}
	}
	return nil
}

// leaseTools is the format the model on l writes tool calls in, which its
// answer is parsed in (None: tools not offered, or a backend that parses
// calls itself). On the cpu lane a template without a known format is a
// 400 naming tools.
func leaseTools(e *Entry, l *Lease, req engine.Request) (toolcall.Format, error) {
	if !req.Tools.Offered() || backend(e) != "cpu" {
		return toolcall.None, nil
	}
	f, err := toolcall.ForTemplate(e.Name, l.Model.Info().ChatTemplate, req.Tools)
	if err != nil {
		return f, &api.FieldError{Field: "tools", Msg: err.Error()}
	}
	return f, nil
}

// toolStream turns a generation's tokens into text and tool-call events:
// calls parsed from the text in the model's format, or calls the backend
// parsed itself (an upstream's), which come whole.
type toolStream struct {
	p     *toolcall.Parser // nil: text is text
	calls int              // calls begun
	one   bool             // parallel_tool_calls false: calls after the first are dropped
	// think splits a <think> block off the answer before p reads it;
	// hideReasoning drops the thinking (serve/reasoning.go).
	think         *toolcall.ThinkSplitter
	hideReasoning bool
	// inlineReasoning: thinking the backend split off itself (an
	// upstream's reasoning_content) goes back into the text in a <think>
	// block, for a request that asked for it unsplit (reasoning_format
	// none, think false); thinkOpen: that block is open.
	inlineReasoning, thinkOpen bool
}

func newToolStream(f toolcall.Format, t *engine.Tools) *toolStream {
	ts := &toolStream{one: t != nil && t.One}
	if f != toolcall.None {
		ts.p = toolcall.NewParser(f)
	}
	return ts
}

// plain reports whether t is only text to pass on as it is.
func (ts *toolStream) plain(t engine.Token) bool {
	return ts.p == nil && ts.think == nil && len(t.ToolCalls) == 0 && t.Reasoning == "" && !ts.thinkOpen
}

// push is what token t adds.
func (ts *toolStream) push(t engine.Token) []toolcall.Event {
	var evs []toolcall.Event
	if t.Reasoning != "" {
		evs = ts.backendThinking(evs, t.Reasoning)
	}
	if ts.thinkOpen && (t.Text != "" || len(t.ToolCalls) > 0) {
		evs = ts.backendThinking(evs, "") // the answer proper begins
	}
	switch {
	case ts.think != nil:
		evs = ts.afterThinking(evs, ts.think.Push(t.Text))
	case ts.p != nil:
		evs = append(evs, ts.p.Push(t.Text)...)
	case t.Text != "":
		evs = append(evs, toolcall.Event{Kind: toolcall.Text, Text: t.Text})
	}
	for j, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = toolcall.None.NewID()
		}
		args := c.Function.ArgumentsText()
		i := ts.calls + j
		call := toolcall.Call{ID: id, Name: c.Function.Name, Arguments: args, Valid: json.Valid([]byte(args)) && bytes.HasPrefix(bytes.TrimSpace([]byte(args)), []byte("{"))}
		call.Raw = fmt.Sprintf(`{"name": %q, "arguments": %s}`, call.Name, args)
		evs = append(evs, toolcall.Event{Kind: toolcall.Start, Index: i, Call: toolcall.Call{ID: id, Name: call.Name}},
			toolcall.Event{Kind: toolcall.Args, Index: i, Text: args}, toolcall.Event{Kind: toolcall.End, Index: i, Call: call})
	}
	return ts.count(evs)
}

// flush is what the end of the answer adds.
func (ts *toolStream) flush() []toolcall.Event {
	var evs []toolcall.Event
	if ts.thinkOpen {
		evs = ts.backendThinking(evs, "")
	}
	if ts.think != nil {
		evs = ts.afterThinking(evs, ts.think.Flush())
	}
	if ts.p != nil {
		evs = append(evs, ts.p.Flush()...)
	}
	return ts.count(evs)
}

// backendThinking adds to evs the thinking the backend split off itself
// (an upstream's; "": the answer proper begins): Reasoning events, or,
// inlineReasoning, the text the model wrote: <think>, the thinking,
// </think>, with the newlines Qwen3's and DeepSeek R1's templates put
// around it.
func (ts *toolStream) backendThinking(evs []toolcall.Event, thought string) []toolcall.Event {
	switch {
	case !ts.inlineReasoning:
		if thought != "" {
			evs = append(evs, toolcall.Event{Kind: toolcall.Reasoning, Text: thought})
		}
	case thought == "":
		ts.thinkOpen = false
		evs = append(evs, toolcall.Event{Kind: toolcall.Text, Text: "\n</think>\n\n"})
	case !ts.thinkOpen:
		ts.thinkOpen = true
		thought = "<think>\n" + thought
		fallthrough
	default:
		evs = append(evs, toolcall.Event{Kind: toolcall.Text, Text: thought})
	}
	return evs
}

// afterThinking adds to evs what the splitter's events make: thinking as
// it is, the answer's text through the call parser when there is one.
func (ts *toolStream) afterThinking(evs, split []toolcall.Event) []toolcall.Event {
	for _, e := range split {
		if e.Kind == toolcall.Text && ts.p != nil {
			evs = append(evs, ts.p.Push(e.Text)...)
			continue
		}
		evs = append(evs, e)
	}
	return evs
}

// count counts the calls evs begin and drops those after the first when
// only one is wanted.
func (ts *toolStream) count(evs []toolcall.Event) []toolcall.Event {
	out := evs[:0]
	for _, e := range evs {
		if e.Kind == toolcall.Reasoning && ts.hideReasoning {
			continue
		}
		if e.Kind != toolcall.Text && e.Kind != toolcall.Reasoning && ts.one && e.Index > 0 {
			continue
		}
		if e.Kind == toolcall.Start {
			ts.calls++
		}
		out = append(out, e)
	}
	return out
}

// finish is the finish reason: tool_calls when the answer made calls and
// ended by itself (cut by max_tokens, it stays length).
func (ts *toolStream) finish(reason string) string {
	if ts.calls > 0 && reason == engine.FinishStop {
		return engine.FinishToolCalls
	}
	return reason
}

// chatDeltas are the OpenAI stream deltas of evs: content, and tool-call
// pieces (a call's first with its index, id, type and name; then its
// arguments' text as it comes).
func chatDeltas(evs []toolcall.Event) []api.Delta {
	var out []api.Delta
	for _, e := range evs {
		switch e.Kind {
		case toolcall.Text:
			text := e.Text
			out = append(out, api.Delta{Content: &text})
		case toolcall.Reasoning:
			text := e.Text
			out = append(out, api.Delta{ReasoningContent: &text})
		case toolcall.Start:
			out = append(out, api.Delta{ToolCalls: []api.ToolCallDelta{{Index: e.Index, ID: e.Call.ID, Type: "function",
				Function: api.FunctionDelta{Name: e.Call.Name}}}})
		case toolcall.Args:
			if n := len(out); n > 0 && len(out[n-1].ToolCalls) == 1 && out[n-1].ToolCalls[0].Index == e.Index && out[n-1].ToolCalls[0].ID == "" {
				out[n-1].ToolCalls[0].Function.Arguments += e.Text // one piece per token
				continue
			}
			out = append(out, api.Delta{ToolCalls: []api.ToolCallDelta{{Index: e.Index, Function: api.FunctionDelta{Arguments: e.Text}}}})
		}
	}
	return out
}

// chatAnswer gathers an unstreamed answer: its text and its calls.
type chatAnswer struct {
	text, reasoning bytes.Buffer
	calls           []api.ToolCall
}

func (a *chatAnswer) add(evs []toolcall.Event) {
	for _, e := range evs {
		switch e.Kind {
		case toolcall.Text:
			a.text.WriteString(e.Text)
		case toolcall.Reasoning:
			a.reasoning.WriteString(e.Text)
		case toolcall.End:
			a.calls = append(a.calls, api.ToolCall{ID: e.Call.ID, Type: "function", Function: api.FunctionCall{Name: e.Call.Name, Arguments: e.Call.Arguments}})
		}
	}
}

// ollamaPieces are the Ollama message parts of evs: text, and each call
// whole once it ends (Ollama's arguments are an object: a call whose
// arguments are not one, or that was cut short, is given as its text).
func ollamaPieces(evs []toolcall.Event) (text string, calls []api.OllamaToolCall) {
	for _, e := range evs {
		switch {
		case e.Kind == toolcall.Text:
			text += e.Text
		case e.Kind == toolcall.End && e.Call.Valid:
			calls = append(calls, api.OllamaToolCall{ID: e.Call.ID, Function: api.OllamaFunctionCall{Index: e.Index, Name: e.Call.Name,
				Arguments: json.RawMessage(e.Call.Arguments)}})
		case e.Kind == toolcall.End:
			text += e.Call.Raw
		}
	}
	return text, calls
}
