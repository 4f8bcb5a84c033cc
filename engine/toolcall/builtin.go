package toolcall

import (
	"encoding/json"
	"strings"
)

// builtinParam is the one argument each Llama 3.1 built-in tool takes,
// by the names llama.cpp's server recognises (common/chat.cpp, after
// llama-stack's tool runtimes): search tools a `query`, code tools `code`.
var builtinParam = map[string]string{
	"wolfram_alpha": "query", "web_search": "query", "brave_search": "query",
	"python": "code", "code_interpreter": "code",
}

// BuiltinTools is the chat template's `builtin_tools` variable for a
// request offering defs (OpenAI's tools array): the offered functions a
// Llama 3.x template announces as built in ("Environment: ipython",
// "Tools: brave_search, wolfram_alpha") and whose calls it writes as
// `<|python_tag|>name.call(query="…")`, as llama.cpp's server passes them.
// Nil — leave the variable undefined — unless f is Llama and the template
// knows the python tag, or when no offered tool qualifies; a tool
// qualifies by its name and by declaring that argument.
func BuiltinTools(f Format, template string, defs json.RawMessage) []string {
	if f != Llama || !strings.Contains(template, pythonTag) {
		return nil
	}
	var tools []struct {
		Type     string
		Function struct {
			Name       string
			Parameters struct {
				Properties map[string]json.RawMessage
			}
		}
	}
	if json.Unmarshal(defs, &tools) != nil {
		return nil // the request's tools were checked before; nothing to announce
	}
	var names []string
	for _, t := range tools {
		fn := t.Function
		if p, ok := builtinParam[fn.Name]; ok && t.Type == "function" && fn.Parameters.Properties[p] != nil {
			names = append(names, fn.Name)
		}
	}
	return names
}
