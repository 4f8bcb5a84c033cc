// Package chattemplate renders a model's chat template (Jinja, from
// tokenizer_config.json or chat_template.jinja) into the prompt text the
// model was trained on, the way transformers renders it. A chat template is
// part of a checkpoint's files, so it lives below both the pipeline (patch
// finds the end-of-turn token through it) and the engines (engine/cpu
// renders conversations with it); it needs nothing but its Message type.
//
// Templates come from any model on the Hub and are hostile input, so they
// run in format/chattemplate/jinja, a small sandboxed interpreter written
// for chat templates: no loader (include, import, extends fail at parse
// time), no access to anything but the conversation and the variables
// given here, a render deadline, a step budget, and limits on nesting,
// recursion, string and list sizes and output, checked before allocating.
// See jinja.Limits.
package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/edgectl/edgectl/format/chattemplate/jinja"
	"github.com/edgectl/edgectl/internal/clip"
)

// Message is one chat turn (engine.Message is this type).
type Message struct {
	Role    string `json:"role"` // system, user, assistant, tool
	Content string `json:"content"`
	// ToolCalls are the functions an assistant turn called.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name say which call a tool turn answers (Name: the
	// function's; Ollama sends only it).
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	// ReasoningContent is an assistant turn's thinking, sent back in the
	// history: templates read it as message.reasoning_content (Qwen3,
	// DeepSeek, Seed-OSS) or message.thinking (gpt-oss); each decides
	// which turns' thinking it keeps.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// ToolCall is one function call of an assistant turn, as transformers
// passes it to templates: {"id", "type": "function", "function": {"name",
// "arguments"}}.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"` // "function" when empty
	Function FunctionCall `json:"function"`
}

// FunctionCall is a call's function and arguments.
type FunctionCall struct {
	Name string `json:"name"`
	// Arguments is JSON: an object, which templates get as a mapping
	// (they write it with tojson, or read its items), or, when a client's
	// arguments were not a JSON object, that text as a JSON string.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ArgumentsOf is Arguments for arguments' text as OpenAI sends it: the
// object it holds, or, when it holds none, the text as a JSON string.
func ArgumentsOf(text string) json.RawMessage {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(text)
	return b
}

// ArgumentsText is the arguments as OpenAI's text: the object's JSON, or
// the string's content.
func (f FunctionCall) ArgumentsText() string {
	var s string
	if json.Unmarshal(f.Arguments, &s) == nil {
		return s
	}
	if len(f.Arguments) == 0 {
		return "{}"
	}
	return string(f.Arguments)
}

// Limits bound parsing and rendering; zero fields take DefaultLimits.
type Limits = jinja.Limits

// DefaultLimits are the limits Parse uses.
func DefaultLimits() Limits { return jinja.DefaultLimits() }

// Template is a parsed chat template; safe for concurrent Render calls.
type Template struct {
	src string
	t   *jinja.Template
}

// Parse compiles a Jinja chat template with DefaultLimits.
func Parse(src string) (*Template, error) { return ParseLimits(src, Limits{}) }

// ParseLimits compiles a Jinja chat template with the given limits.
func ParseLimits(src string, lim Limits) (*Template, error) {
	t, err := jinja.Parse(src, lim)
	if err != nil {
		return nil, fmt.Errorf("chat template %w", err)
	}
	return &Template{src: src, t: t}, nil
}

// Source is the template text.
func (t *Template) Source() string { return t.src }

// Vars are the variables templates read besides the messages.
type Vars struct {
	BOSToken, EOSToken  string
	AddGenerationPrompt bool
	// Extra holds anything else (enable_thinking, tools, documents, …).
	// Values are JSON-like Go values; a json.RawMessage keeps the key
	// order a client sent, which tojson reproduces (Go maps are sorted).
	Extra map[string]any
	// Now is strftime_now's clock; zero means the current time.
	Now time.Time
}

// errRaised carries raise_exception's message out of the renderer.
type errRaised struct{ msg string }

func (e errRaised) Error() string { return "chat template: " + e.msg }

// Is makes errors.Is(err, ErrRaised) hold.
func (e errRaised) Is(target error) bool { return target == ErrRaised }

// ErrRaised is what a Render error wraps when the template itself refused
// the conversation with raise_exception ("roles must alternate", "system
// message not supported"): the request's fault, which servers answer with
// 400, not a fault of the model or the engine.
var ErrRaised = errors.New("the chat template refused the conversation")

// Render produces the prompt for msgs. It stops at ctx's deadline or, when
// ctx has none, after Limits.Timeout.
func (t *Template) Render(ctx context.Context, msgs []Message, v Vars) (string, error) {
	list := make(jinja.List, len(msgs))
	for i, m := range msgs {
		d, err := messageDict(m)
		if err != nil {
			return "", fmt.Errorf("chat template: message %d: %w", i, err)
		}
		list[i] = d
	}
	return t.render(ctx, list, v)
}

// messageDict is a message as transformers gives it to templates: keys a
// turn does not have are absent, not empty (templates test `'tool_calls'
// in message` and `message.tool_call_id is defined`).
func messageDict(m Message) (*jinja.Dict, error) {
	d := jinja.NewDict()
	d.SetString("role", m.Role)
	d.SetString("content", m.Content)
	if len(m.ToolCalls) > 0 {
		calls := make(jinja.List, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			fn := jinja.NewDict()
			fn.SetString("name", c.Function.Name)
			var args jinja.Value = jinja.NewDict()
			if len(c.Function.Arguments) > 0 {
				var err error
				if args, err = jinja.FromJSON(c.Function.Arguments); err != nil {
					return nil, fmt.Errorf("tool call %d (%s): arguments: %w", i, c.Function.Name, err)
				}
			}
			fn.SetString("arguments", args)
			call := jinja.NewDict()
			if c.ID != "" {
				call.SetString("id", c.ID)
			}
			typ := c.Type
			if typ == "" {
				typ = "function"
			}
			call.SetString("type", typ)
			call.SetString("function", fn)
			calls[i] = call
		}
		d.SetString("tool_calls", calls)
	}
	if m.ToolCallID != "" {
		d.SetString("tool_call_id", m.ToolCallID)
	}
	if m.Name != "" {
		d.SetString("name", m.Name)
	}
	if m.ReasoningContent != "" {
		// Both names: llama.cpp's server (common/chat.cpp) copies
		// reasoning_content to thinking for gpt-oss's template, which
		// reads only that.
		d.SetString("reasoning_content", m.ReasoningContent)
		d.SetString("thinking", m.ReasoningContent)
	}
	return d, nil
}

// render is Render for messages already converted (the tests pass messages
// with tool calls and content parts this way).
func (t *Template) render(ctx context.Context, messages jinja.Value, v Vars) (string, error) {
	now := v.Now
	if now.IsZero() {
		now = time.Now()
	}
	vars := map[string]jinja.Value{
		"messages":              messages,
		"add_generation_prompt": v.AddGenerationPrompt,
		"bos_token":             v.BOSToken,
		"eos_token":             v.EOSToken,
		// transformers always passes these, None when absent.
		"tools":     nil,
		"documents": nil,
		"raise_exception": &jinja.Func{Name: "raise_exception", Fn: func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			msg := "raise_exception() called"
			if len(args) > 0 {
				if s, ok := args[0].(string); ok {
					msg = s
				}
			}
			return nil, errRaised{clip.Text(msg)} // one line, ~185 bytes with its length: it reaches HTTP clients
		}},
		"strftime_now": &jinja.Func{Name: "strftime_now", Fn: func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("strftime_now() takes one format argument")
			}
			f, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("strftime_now(): the format must be a string")
			}
			return strftime(now, f), nil
		}},
	}
	for k, val := range v.Extra {
		c, err := jinja.ValueOf(val)
		if err != nil {
			return "", fmt.Errorf("chat template variable %s: %w", k, err)
		}
		vars[k] = c
	}
	out, err := t.t.Render(ctx, vars)
	if err != nil {
		var raised errRaised
		if errors.As(err, &raised) {
			return "", raised
		}
		return "", fmt.Errorf("chat template %w", err)
	}
	return out, nil
}

// strftime is C's strftime for the directives chat templates use (and
// glibc's %-d style flags that drop padding), in English.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		pad := true
		if f[i] == '-' && i+1 < len(f) {
			pad = false
			i++
		}
		num := func(n, width int) {
			s := fmt.Sprint(n)
			if pad {
				for len(s) < width {
					s = "0" + s
				}
			}
			b.WriteString(s)
		}
		hour12 := t.Hour() % 12
		if hour12 == 0 {
			hour12 = 12
		}
		switch f[i] {
		case 'Y':
			num(t.Year(), 4)
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			s := fmt.Sprint(t.Day())
			if pad && len(s) < 2 {
				s = " " + s
			}
			b.WriteString(s)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			num(hour12, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'j':
			num(t.YearDay(), 3)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'B':
			b.WriteString(t.Month().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'w':
			num(int(t.Weekday()), 1)
		case 'Z':
			name, _ := t.Zone()
			b.WriteString(name)
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if !pad {
				b.WriteByte('-')
			}
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

// ErrNoTemplate means the model ships no chat template.
var ErrNoTemplate = errors.New("model has no chat template (tokenizer_config.json chat_template or chat_template.jinja)")
