package toolcall

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Kind is what an Event carries.
type Kind uint8

const (
	Text  Kind = iota // Event.Text is answer text
	Start             // a call begins: Event.Call has its ID and Name
	Args              // Event.Text is the next piece of the call's arguments
	End               // the call is over: Event.Call is the whole call
	// Reasoning: Event.Text is the model's reasoning, not answer text
	// (harmony's analysis channel).
	Reasoning
)

// Event is one thing the parser made of the answer so far.
type Event struct {
	Kind  Kind
	Text  string
	Index int  // the call's position in the answer (Start, Args, End)
	Call  Call // Start: ID and Name; End: everything
}

// Call is a parsed function call.
type Call struct {
	ID   string
	Name string
	// Arguments is the arguments' JSON text as the model wrote it (a JSON
	// string holding JSON is unwrapped; none written is "{}"). The Args
	// events of a call add up to it.
	Arguments string
	// Raw is the call's text, wrapper included, as the model wrote it.
	Raw string
	// Valid: the call closed and its arguments are a JSON object. A call
	// cut short (max_tokens) or malformed after its name was read still
	// ends with an End event, not valid.
	Valid bool
}

// state is where the parser is in the answer.
type state uint8

const (
	sText   state = iota // answer text; looking for the family's marker
	sStart               // Llama: the answer's start, which may be a call
	sPlain               // Llama: the answer is text; nothing more to find
	sOpen                // after the marker: '{' or Mistral's '['
	sName                // MistralArgs: the name, up to [ARGS]
	sObject              // inside a call's JSON
	sAfter               // after a call: its closing tag, a separator, the next call
	sItem                // Mistral: inside [ … ], after ','
	sHead                // a family's head after its marker (family.head)
	sThen                // the head's second part (family.then)
	sClose               // a family's closers after a call or a list of calls
	sHeader              // harmony: a message's header
	sPy                  // Llama: a pythonic call list at the answer's start
	sTag                 // after <|python_tag|>: a call's JSON, a built-in call or code (pythontag.go)
	sCode                // code after <|python_tag|>: the rest of the answer
)

// Parser turns a model's answer, pushed as it streams, into text and
// calls in its family's format. Push and Flush return the events so far;
// Args events let clients show arguments while they are written.
type Parser struct {
	f      Format
	fam    *family // nil: one of the four formats read by hand here
	st     state
	held   string          // text not yet decided on
	raw    strings.Builder // the current call's text, from its marker
	obj    *objScan
	name   string // MistralArgs: the name before [ARGS]
	calls  int
	id     string
	start  bool // Start sent for the current call
	sent   int  // arguments bytes sent in Args events
	array  bool // Mistral: the calls are in [ … ]
	spaces string
	code   strings.Builder // sCode: the code so far
	// reasoning: the text being read is reasoning (harmony's analysis).
	reasoning bool
	out       []Event
}

// NewParser parses answers in format f (not None).
func NewParser(f Format) *Parser {
	p := &Parser{f: f, fam: familyOf(f)}
	switch f {
	case Llama:
		p.st = sStart
	case Harmony:
		p.st = sHeader
	case FunctionaryV32: // the prompt ends with ">>>": a recipient comes first
		p.st = sHead
	}
	return p
}

// Calls is how many calls have begun.
func (p *Parser) Calls() int { return p.calls }

// markers are what begin calls in text.
func (p *Parser) markers() []string {
	switch {
	case p.fam != nil:
		return p.fam.markers
	case p.f == Hermes:
		return []string{"<tool_call>"}
	}
	return []string{"[TOOL_CALLS]"}
}

// named reports whether the call's name is in its wrapper and its JSON is
// the arguments.
func (p *Parser) named() bool { return p.f == MistralArgs || p.fam != nil && p.fam.named }

// arrays reports whether calls may come as a JSON list.
func (p *Parser) arrays() bool { return p.f == Mistral || p.fam != nil && p.fam.array }

// nameKey is the key naming the function in a call object.
func (p *Parser) nameKey() string {
	if p.fam != nil && p.fam.nameKey != "" {
		return p.fam.nameKey
	}
	return "name"
}

const pythonTag = "<|python_tag|>"

// Push adds the next piece of the answer.
func (p *Parser) Push(text string) []Event {
	p.out = p.out[:0]
	p.held += text
	p.run(false)
	return p.out
}

// Flush ends the answer: text held back goes out, and a call cut short
// ends (not valid) if its name was read, or is text if not.
func (p *Parser) Flush() []Event {
	p.out = p.out[:0]
	p.run(true)
	switch p.st {
	case sText, sStart, sPlain, sHeader:
		if p.reasoning {
			if p.held != "" {
				p.out = append(p.out, Event{Kind: Reasoning, Text: p.held})
			}
			break
		}
		p.text(p.held, true)
	case sAfter, sItem, sClose: // a closing tag or separator cut short: wrapper, not answer
	case sCode:
		p.endCode()
	case sTag: // only a tag came: wrapper, not answer
	case sObject:
		if p.start {
			p.end(false)
			break
		}
		fallthrough
	default:
		p.text(p.raw.String()+p.held, true)
	}
	p.held = ""
	return p.out
}

// text sends answer text. Trailing whitespace is held until more text
// comes: before a call, between calls and after the last it is not part
// of the answer (so the text is the same however the answer streamed);
// at the end of an answer without calls it is.
func (p *Parser) text(s string, final bool) {
	s = p.spaces + s
	body := strings.TrimRight(s, " \t\r\n")
	p.spaces = s[len(body):]
	if final && p.calls == 0 {
		body, p.spaces = s, ""
	}
	if body != "" {
		p.out = append(p.out, Event{Kind: Text, Text: body})
	}
}

// notCall gives back what looked like a call's beginning as text.
func (p *Parser) notCall() {
	s := p.raw.String()
	p.raw.Reset()
	p.obj = nil
	p.st = sText
	if p.f == Llama {
		p.st = sPlain
	}
	p.reasoning = false
	p.text(s, false)
}

// run decides on as much of held as it can; final: no more text comes.
func (p *Parser) run(final bool) {
	for {
		before := len(p.held)
		st := p.st
		p.step(final)
		if len(p.held) == before && p.st == st {
			return
		}
	}
}

// step advances from the current state once.
func (p *Parser) step(final bool) {
	switch p.st {
	case sPlain:
		p.plainStep()
	case sText:
		if p.f == Harmony {
			p.harmonyBody(final)
			return
		}
		ms := p.markers()
		if i, m := firstMarker(p.held, ms); i >= 0 {
			p.text(p.held[:i], false)
			p.raw.Reset()
			p.raw.WriteString(p.spaces + m) // spaces before a call are not answer text
			p.spaces = ""
			p.held = p.held[i+len(m):]
			p.st, p.array, p.name = sOpen, false, ""
			switch {
			case m == pythonTag:
				p.st = sTag
			case p.f == MistralArgs:
				p.st = sName
			case p.fam != nil && p.fam.head != nil:
				p.st = sHead
			}
			return
		}
		keep := partialSuffixAny(p.held, ms)
		p.text(p.held[:len(p.held)-keep], false)
		p.held = p.held[len(p.held)-keep:]
	case sStart:
		t := strings.TrimLeft(p.held, " \t\r\n")
		switch {
		case t == "" || strings.HasPrefix(pythonTag, t):
			return // wait for more
		case strings.HasPrefix(t, pythonTag):
			p.raw.WriteString(p.held[:len(p.held)-len(t)+len(pythonTag)])
			p.held = t[len(pythonTag):]
			p.st = sTag
		case t[0] == '{':
			p.raw.WriteString(p.held[:len(p.held)-len(t)])
			p.held = t
			p.st = sOpen
		case t[0] == '[': // Llama 3.2's pythonic calls (pythonic.go)
			p.raw.WriteString(p.held[:len(p.held)-len(t)])
			p.held = t
			p.st = sPy
		default:
			p.st = sPlain
		}
	case sOpen, sItem:
		if p.st == sOpen && p.fam != nil && !p.fenceStep(final) {
			return
		}
		t := strings.TrimLeft(p.held, " \t\r\n")
		p.raw.WriteString(p.held[:len(p.held)-len(t)])
		p.held = t
		if t == "" {
			return
		}
		switch {
		case t[0] == '{':
			p.beginObject(p.named()) // named: the object is the arguments
		case t[0] == '[' && p.st == sOpen && p.arrays() && !p.named():
			p.raw.WriteByte('[')
			p.held = t[1:]
			p.array, p.st = true, sItem
		default:
			p.notCall()
		}
	case sName:
		p.nameStep(final)
	case sHead:
		p.fam.head(p, final)
	case sThen:
		p.fam.then(p, final)
	case sClose:
		p.closeStep(final)
	case sHeader:
		p.harmonyHeader(final)
	case sPy:
		p.pythonicStep(final)
	case sTag:
		p.tagStep(final)
	case sCode:
		p.codeStep(final)
	case sObject:
		p.objectStep()
	case sAfter:
		p.afterStep(final)
	}
}

// beginObject starts reading a call's JSON; whole: it is the arguments.
func (p *Parser) beginObject(whole bool) {
	p.obj = newObjScan(whole, p.nameKey())
	p.id, p.start, p.sent = p.f.NewID(), false, 0
	p.st = sObject
	if whole {
		p.startCall()
	}
}

func (p *Parser) startCall() {
	p.start = true
	name := p.name
	if p.obj != nil && !p.obj.whole {
		name = p.obj.name
	}
	p.out = append(p.out, Event{Kind: Start, Index: p.calls, Call: Call{ID: p.id, Name: name}})
	p.calls++
}

// nameStep reads MistralArgs' `name[ARGS]` (or `name[CALL_ID]id[ARGS]`).
func (p *Parser) nameStep(final bool) {
	i := strings.Index(p.held, "[ARGS]")
	if i < 0 {
		if len(p.held) > 128 || final || strings.ContainsAny(p.held, " \n{") {
			p.notCall()
		}
		return
	}
	name := p.held[:i]
	if j := strings.Index(name, "[CALL_ID]"); j >= 0 {
		name = name[:j]
	}
	p.raw.WriteString(p.held[:i+len("[ARGS]")])
	p.held = p.held[i+len("[ARGS]"):]
	if !namePattern.MatchString(name) {
		p.notCall()
		return
	}
	p.name = name
	p.st = sOpen // the arguments object comes next
}

// objectStep feeds held bytes to the call's scanner and sends what they
// tell: the call's start once its name is read, its arguments as they
// come, its end.
func (p *Parser) objectStep() {
	o := p.obj
	n := 0
	for n < len(p.held) && o.feed(p.held[n]) {
		n++
	}
	p.raw.WriteString(p.held[:n])
	p.held = p.held[n:]
	if !p.start && o.nameOK {
		p.startCall()
	}
	if p.start && o.streamable() {
		if at := max(p.sent, o.argsStart); o.argsSoFar() > at {
			p.out = append(p.out, Event{Kind: Args, Index: p.calls - 1, Text: string(o.buf[at:o.argsSoFar()])})
			p.sent = o.argsSoFar()
		}
	}
	if !o.done {
		if len(p.held) > 0 { // a bracket closed that never opened
			p.endOrText()
		}
		return
	}
	p.endOrText()
}

// endOrText ends the call, or, when no name was read, gives its text back.
func (p *Parser) endOrText() {
	if !p.start {
		p.notCall()
		return
	}
	p.end(p.obj.done)
	p.st = sAfter
}

// end sends the rest of the call's arguments and its End event.
func (p *Parser) end(closed bool) {
	o := p.obj
	c := Call{ID: p.id, Name: p.name, Raw: p.raw.String()}
	if !o.whole {
		c.Name = o.name
	}
	switch {
	case o.argsStart < 0:
		c.Arguments = "{}"
	case o.streamable() || !closed:
		c.Arguments = string(o.buf[o.argsStart:o.argsSoFar()])
	default:
		c.Arguments = strings.TrimSpace(string(o.buf[o.argsStart:o.argsSoFar()]))
		var s string
		if json.Unmarshal([]byte(c.Arguments), &s) == nil { // arguments written as a JSON string
			c.Arguments = s
		}
	}
	from := max(p.sent, o.argsStart)
	if !o.streamable() || o.argsStart < 0 {
		from = -1
	}
	switch {
	case from >= 0 && o.argsSoFar() > from:
		p.out = append(p.out, Event{Kind: Args, Index: p.calls - 1, Text: string(o.buf[from:o.argsSoFar()])})
	case from < 0:
		p.out = append(p.out, Event{Kind: Args, Index: p.calls - 1, Text: c.Arguments})
	}
	args := bytes.TrimSpace([]byte(c.Arguments))
	c.Valid = closed && json.Valid(o.buf) && len(args) > 0 && args[0] == '{' && json.Valid(args)
	p.out = append(p.out, Event{Kind: End, Index: p.calls - 1, Call: c})
	p.obj, p.start = nil, false
	p.raw.Reset()
}

// afterStep reads what follows a call: Hermes' closing tag, Mistral's
// ',' or ']', Llama's ';', or the next call; anything else is text.
func (p *Parser) afterStep(final bool) {
	t := strings.TrimLeft(p.held, " \t\r\n")
	if t == "" {
		return
	}
	next := func(rest string, st state) {
		p.held = rest
		p.st = st
	}
	switch {
	case p.f == Hermes && strings.HasPrefix(t, "</tool_call>"):
		next(t[len("</tool_call>"):], sText)
	case p.f == Hermes && strings.HasPrefix("</tool_call>", t):
		if final { // cut short: wrapper, not answer
			next("", sText)
		}
		return // the tag is still coming
	case p.array && t[0] == ',':
		p.raw.Reset()
		next(t[1:], sItem)
	case p.array && t[0] == ']':
		p.array = false
		if p.fam != nil {
			next(t[1:], sClose)
			return
		}
		next(t[1:], sText)
	case p.fam != nil && !p.array:
		p.st = sClose
	case p.f == Llama && (t[0] == ';' || t[0] == '{'):
		if t[0] == ';' {
			t = t[1:]
		}
		p.raw.Reset()
		next(t, sOpen)
	default:
		p.st = sText
		if p.f == Llama {
			p.st = sPlain
		}
	}
}

// partialSuffix is the length of s's longest suffix that begins m (and is
// not all of it).
func partialSuffix(s, m string) int {
	for n := min(len(m)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, m[:n]) {
			return n
		}
	}
	return 0
}
