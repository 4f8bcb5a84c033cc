package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/grammar"
)

// Tool is one function a request offers.
type Tool struct {
	Name string
	// Parameters is the JSON schema of its arguments (nil: any object).
	Parameters json.RawMessage
}

// MaxTools bounds how many functions one request offers.
const MaxTools = 128

// namePattern is OpenAI's rule for function names; names stay plain
// text inside every family's wrapper.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ParseTools reads a tools array (OpenAI's and Ollama's shape:
// [{"type":"function","function":{"name","description","parameters"}}]).
// Errors name the element at fault.
func ParseTools(defs json.RawMessage) ([]Tool, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(defs, &list); err != nil {
		return nil, fmt.Errorf(`tools must be an array of {"type":"function","function":{"name":…,"parameters":{…}}}`)
	}
	if len(list) > MaxTools {
		return nil, fmt.Errorf("%d tools: at most %d may be offered", len(list), MaxTools)
	}
	var out []Tool
	seen := map[string]bool{}
	for i, raw := range list {
		var t struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil || t.Function == nil {
			return nil, fmt.Errorf(`tools[%d] must be {"type":"function","function":{"name":…,"parameters":{…}}}`, i)
		}
		if t.Type != "function" && t.Type != "" {
			return nil, fmt.Errorf(`tools[%d].type %q: only "function" tools are supported`, i, t.Type)
		}
		name := t.Function.Name
		switch {
		case !namePattern.MatchString(name):
			return nil, fmt.Errorf("tools[%d].function.name %q: want 1 to 64 letters, digits, underscores or dashes", i, name)
		case seen[name]:
			return nil, fmt.Errorf("tools[%d].function.name %q: two tools have that name", i, name)
		}
		seen[name] = true
		params := bytes.TrimSpace(t.Function.Parameters)
		if bytes.Equal(params, []byte("null")) {
			params = nil
		}
		if len(params) > 0 && params[0] != '{' {
			return nil, fmt.Errorf("tools[%d].function.parameters must be a JSON schema object", i)
		}
		out = append(out, Tool{Name: name, Parameters: params})
	}
	return out, nil
}

// Grammar is the grammar of an answer that is one call, in format f, to
// one of the offered functions (ToolRequired) or to the named one
// (ToolFunction): the family's wrapper around the function's name and
// arguments that follow its parameters schema. The name written picks
// the schema (grammar.Composer.Switch).
func Grammar(f Format, t *engine.Tools) (*grammar.Grammar, error) {
	w, ok := wrappers[f]
	if !ok {
		return nil, fmt.Errorf("no tool-call format to constrain the answer to")
	}
	tools, err := ParseTools(t.Defs)
	if err != nil {
		return nil, err
	}
	k := grammar.NewComposer()
	var tail grammar.Part
	if w.tail != "" {
		if tail, err = k.Literal(w.tail); err != nil {
			return nil, err
		}
	}
	var heads []string
	var then []grammar.Part
	for i, tool := range tools {
		if t.Choice == engine.ToolFunction && tool.Name != t.Name {
			continue
		}
		args := k.AnyObject()
		if tool.Parameters != nil {
			if args, err = k.Schema(tool.Parameters); err != nil {
				return nil, fmt.Errorf("tools[%d].function.parameters: %w", i, err)
			}
		}
		if w.tail != "" {
			if args, err = k.Seq(args, tail); err != nil {
				return nil, err
			}
		}
		heads = append(heads, w.callHead(tool.Name))
		then = append(then, args)
	}
	if len(heads) == 0 {
		if t.Choice == engine.ToolFunction {
			return nil, fmt.Errorf("tool_choice names function %q, which tools does not offer", t.Name)
		}
		return nil, fmt.Errorf("tool_choice %q needs at least one tool", t.Choice)
	}
	sw, err := k.Switch(heads, then)
	if err != nil {
		return nil, err
	}
	return k.Grammar(sw)
}
