package toolcall

import "strings"

// family is how the formats after the first four (Hermes, Llama,
// Mistral, MistralArgs, which parse.go reads by hand) read the wrapper
// around their calls: the texts that begin calls in answer text, a head
// that reads what follows one up to the call's JSON, the fences that may
// stand before that JSON, and the closers that may follow a call or a
// list of calls. Each family's file defines its own.
type family struct {
	markers []string
	// head reads p.held after a marker (state sHead): it sets p.name and
	// moves to sOpen, waits for more text, or gives the marker back as
	// text (p.notCall). nil: the marker is followed by the JSON at once.
	head func(p *Parser, final bool)
	// then reads a second part of the head (state sThen), when head asks.
	then    func(p *Parser, final bool)
	fences  []string // optional texts before the JSON ("```json")
	closers []string // optional texts after a call or the list of calls
	nameKey string   // call-object families: the key holding the name
	array   bool     // calls may come as a JSON list [ … ]
	named   bool     // the name is in the wrapper; the JSON is the arguments
}

// familyOf is f's family; nil for the four formats parse.go reads by hand.
func familyOf(f Format) *family {
	switch f {
	case DeepSeekR1, DeepSeekV31:
		return deepseekFamily
	case Granite:
		return graniteFamily
	case CommandR:
		return commandRFamily
	case CommandR7B:
		return commandR7BFamily
	case Harmony:
		return harmonyFamily
	case FunctionaryV31:
		return functionaryFamily
	case FunctionaryV32:
		return functionaryV32Family
	}
	return nil
}

// match is how held text compares with a literal the parser expects.
type match uint8

const (
	miss match = iota // held does not begin with it
	got               // it was there and is consumed (into the call's raw text)
	wait              // held is a proper prefix of it: more text decides
)

// take consumes want at the start of held (after whitespace, when ws).
// A held text that is a proper prefix of want waits, unless final.
func (p *Parser) take(want string, ws, final bool) match {
	t := p.held
	if ws {
		t = strings.TrimLeft(t, " \t\r\n")
	}
	switch {
	case strings.HasPrefix(t, want):
		p.raw.WriteString(p.held[:len(p.held)-len(t)+len(want)])
		p.held = t[len(want):]
		return got
	case strings.HasPrefix(want, t) && !final:
		return wait
	}
	return miss
}

// nameUntil reads a function's name up to end (consumed with it): ok
// with the name, or wait for more text, or miss: not a name (too long,
// the text cut, a character no name has).
func (p *Parser) nameUntil(end string, final bool) (string, match) {
	i := strings.Index(p.held, end)
	if i < 0 {
		before := p.held[:len(p.held)-partialSuffix(p.held, end)]
		if len(p.held) > 128 || final || strings.ContainsAny(before, "{}\"<> \n") {
			return "", miss
		}
		return "", wait
	}
	name := strings.TrimSpace(p.held[:i])
	if !namePattern.MatchString(name) { // left in held: it is text
		return "", miss
	}
	p.raw.WriteString(p.held[:i+len(end)])
	p.held = p.held[i+len(end):]
	return name, got
}

// headUntil is a head that is the name up to end: then the arguments;
// anything else gives the marker back as text.
func (p *Parser) headUntil(end string, final bool) {
	name, m := p.nameUntil(end, final)
	switch m {
	case wait:
	case miss:
		p.notCall()
	default:
		p.namedHead(name)
	}
}

// namedHead finishes a head that read name: the arguments come next.
func (p *Parser) namedHead(name string) {
	p.name = name
	p.st = sOpen
}

// fenceStep skips the family's optional fences before the JSON; false
// while a fence may still be coming.
func (p *Parser) fenceStep(final bool) bool {
	for _, f := range p.fam.fences {
		switch p.take(f, true, final) {
		case wait:
			return false
		}
	}
	return true
}

// closeStep consumes the family's closers after a call (state sClose),
// then goes back to text (harmony: to the next message's header).
func (p *Parser) closeStep(final bool) {
	t := strings.TrimLeft(p.held, " \t\r\n")
	if t == "" {
		return
	}
	for _, c := range p.fam.closers {
		switch {
		case strings.HasPrefix(t, c):
			p.held = t[len(c):]
			return
		case strings.HasPrefix(c, t):
			if final { // cut short: wrapper, not answer
				p.held = ""
				p.st = p.textState()
			}
			return
		}
	}
	p.st = p.textState()
}

// textState is the state answer text is read in.
func (p *Parser) textState() state {
	switch p.f {
	case Llama:
		return sPlain
	case Harmony:
		return sHeader
	}
	return sText
}

// firstMarker is where the first of markers begins in s, and which.
func firstMarker(s string, markers []string) (int, string) {
	at, which := -1, ""
	for _, m := range markers {
		if i := strings.Index(s, m); i >= 0 && (at < 0 || i < at) {
			at, which = i, m
		}
	}
	return at, which
}

// partialSuffixAny is the longest suffix of s that begins one of markers.
func partialSuffixAny(s string, markers []string) int {
	n := 0
	for _, m := range markers {
		n = max(n, partialSuffix(s, m))
	}
	return n
}
