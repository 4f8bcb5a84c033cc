package toolcall

import "strings"

// MeetKai's functionary v3.1 (Llama 3.1 based) writes a call as
// `<function=name>{…}</function>`, text may come first, as its chat
// template's system prompt asks and as it renders calls in the history.
// v3.2 writes messages to recipients, each `>>>recipient\n` and its
// content: `all` is the user (text), any other a function and its JSON
// arguments (`python` also its code as it is); its generation prompt
// ends with the first `>>>`. v3.1 also writes python code after
// `<|python_tag|>`, as Llama 3.1 does.
const (
	fnOpen  = "<function="
	fnClose = "</function>"
	fnTo    = ">>>"
)

var functionaryFamily = &family{
	markers: []string{fnOpen, pythonTag}, // the tag: its python tool's code (pythontag.go)
	head:    functionaryHead,
	closers: []string{fnClose},
	named:   true,
}

// functionaryHead reads `name>` after `<function=`.
func functionaryHead(p *Parser, final bool) { p.headUntil(">", final) }

var functionaryV32Family = &family{
	markers: []string{fnTo},
	head:    functionaryV32Head,
	then:    functionaryV32Python,
	named:   true,
}

// functionaryV32Head reads `recipient\n` after `>>>` (or at the answer's
// start): `all` is text for the user, a name a call.
func functionaryV32Head(p *Parser, final bool) {
	name, m := p.nameUntil("\n", final)
	switch {
	case m == wait:
	case m == miss:
		p.notCall()
	case name == "all":
		p.raw.Reset()
		p.st = sText
	case name == pythonTool:
		p.name = name
		p.st = sThen
	default:
		p.namedHead(name)
	}
}

// functionaryV32Python reads what the python recipient is sent: JSON
// arguments, or its code as it is, up to the answer's end (as llama.cpp
// reads v3.2's raw python; pythontag.go).
func functionaryV32Python(p *Parser, final bool) {
	t := strings.TrimLeft(p.held, " \t\r\n")
	switch {
	case t == "" && !final:
	case strings.HasPrefix(t, "{"):
		p.namedHead(pythonTool)
	default:
		p.beginCode(pythonTool)
	}
}
