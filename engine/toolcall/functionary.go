package toolcall

// MeetKai's functionary v3.1 (Llama 3.1 based) writes a call as
// `<function=name>{…}</function>`, text may come first, as its chat
// template's system prompt asks and as it renders calls in the history.
// v3.2 writes messages to recipients, each `>>>recipient\n` and its
// content: `all` is the user (text), any other a function and its JSON
// arguments; its generation prompt ends with the first `>>>`.
const (
	fnOpen  = "<function="
	fnClose = "</function>"
	fnTo    = ">>>"
)

var functionaryFamily = &family{
	markers: []string{fnOpen},
	head:    functionaryHead,
	closers: []string{fnClose},
	named:   true,
}

// functionaryHead reads `name>` after `<function=`.
func functionaryHead(p *Parser, final bool) { p.headUntil(">", final) }

var functionaryV32Family = &family{
	markers: []string{fnTo},
	head:    functionaryV32Head,
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
	default:
		p.namedHead(name)
	}
}
