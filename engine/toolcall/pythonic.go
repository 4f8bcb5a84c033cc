package toolcall

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Llama 3.2's lightweight models (1B, 3B) also call tools in Python's
// syntax, a list of calls with keyword arguments as their model card's
// pythonic tool format shows:
//
//	[get_weather(city="San Francisco", days=[1, 2]), get_time(zone='UTC')]
//
// as the whole answer. The Llama parser reads it besides the JSON form
// its template asks for: the list is held until it closes (at most
// maxPythonic bytes), then each call comes whole, its keyword arguments
// as a JSON object. Anything else beginning with '[' is text.

const maxPythonic = 16 << 10

// maxPyDepth bounds nesting in a pythonic call's arguments.
const maxPyDepth = 64

// pyStart reports whether s begins a pythonic call list: '[', a name and
// '(' (got), may still (wait), or does not (miss).
func pyStart(s string) match {
	i := 0
	skip := func() {
		for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
			i++
		}
	}
	if s == "" || s[0] != '[' {
		return miss
	}
	i++
	skip()
	n := i
	for i < len(s) && isIdent(s[i], i > n) {
		i++
	}
	if i == len(s) {
		return wait
	}
	if i == n {
		return miss
	}
	skip()
	switch {
	case i == len(s):
		return wait
	case s[i] == '(':
		return got
	}
	return miss
}

func isIdent(c byte, notFirst bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || notFirst && (c >= '0' && c <= '9' || c == '-')
}

// pyListEnd is the end of the list s begins (just past its ']'), looking
// at most limit bytes; -1 when it does not close there.
func pyListEnd(s string, limit int) int {
	depth := 0
	var quote byte
	esc := false
	for i := 0; i < len(s) && i < limit; i++ {
		c := s[i]
		switch {
		case quote != 0:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == quote:
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '(' || c == '{':
			depth++
		case c == ']' || c == ')' || c == '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// pyCall is one parsed pythonic call.
type pyCall struct{ name, args string }

// pyParser reads Python literals into JSON.
type pyParser struct {
	s     string
	i     int
	depth int
}

// pyCalls parses a whole pythonic call list; ok false when s is not one.
func pyCalls(s string) (calls []pyCall, ok bool) {
	p := &pyParser{s: s}
	if !p.eat('[') {
		return nil, false
	}
	for {
		name := p.ident()
		if !namePattern.MatchString(name) {
			return nil, false
		}
		args, ok := p.kwargs()
		if !ok {
			return nil, false
		}
		calls = append(calls, pyCall{name, args})
		if p.eat(']') {
			return calls, p.rest() == ""
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

// kwargs reads a call's parenthesised keyword arguments, `(key=value,
// …)`, as a JSON object's text (a key given twice keeps its last value).
func (p *pyParser) kwargs() (string, bool) {
	if !p.eat('(') {
		return "", false
	}
	args := map[string]json.RawMessage{}
	var order []string
	for !p.eat(')') {
		if len(order) > 0 && !p.eat(',') {
			return "", false
		}
		if p.eat(')') { // a trailing comma
			break
		}
		key := p.ident()
		if key == "" || !p.eat('=') {
			return "", false
		}
		v, ok := p.value()
		if !ok {
			return "", false
		}
		if _, dup := args[key]; !dup {
			order = append(order, key)
		}
		args[key] = v
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range order {
		if i > 0 {
			b.WriteString(", ")
		}
		kj, _ := json.Marshal(k)
		b.Write(kj)
		b.WriteString(": ")
		b.Write(args[k])
	}
	b.WriteByte('}')
	return b.String(), true
}

func (p *pyParser) ws() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyParser) rest() string { p.ws(); return p.s[p.i:] }

// eat consumes c (after whitespace) when it comes next.
func (p *pyParser) eat(c byte) bool {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) ident() string {
	p.ws()
	start := p.i
	for p.i < len(p.s) && isIdent(p.s[p.i], p.i > start) {
		p.i++
	}
	return p.s[start:p.i]
}

// value reads one literal: a string, number, True/False/None (or JSON's
// true/false/null), list, tuple or dict, as JSON.
func (p *pyParser) value() (json.RawMessage, bool) {
	p.ws()
	if p.i >= len(p.s) || p.depth >= maxPyDepth {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '"' || c == '\'':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		b, _ := json.Marshal(s)
		return b, true
	case c == '[' || c == '(':
		return p.seq(map[byte]byte{'[': ']', '(': ')'}[c])
	case c == '{':
		return p.dict()
	}
	start := p.i
	for p.i < len(p.s) && strings.IndexByte(",)]} \t\r\n:", p.s[p.i]) < 0 {
		p.i++
	}
	word := p.s[start:p.i]
	switch word { // Python's literals, and JSON's (Llama 3.1's built-in calls write JSON values)
	case "True", "true":
		return json.RawMessage("true"), true
	case "False", "false":
		return json.RawMessage("false"), true
	case "None", "null":
		return json.RawMessage("null"), true
	}
	if _, err := strconv.ParseFloat(word, 64); err != nil || strings.ContainsAny(word, "xXnN_") {
		return nil, false
	}
	word = strings.TrimPrefix(word, "+")
	if !json.Valid([]byte(word)) { // 1., .5, 007
		f, _ := strconv.ParseFloat(word, 64)
		word = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return json.RawMessage(word), true
}

// str reads a quoted Python string with its escapes.
func (p *pyParser) str() (string, bool) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == q:
			return b.String(), true
		case c == '\\' && p.i < len(p.s):
			e := p.s[p.i]
			p.i++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'u':
				if p.i+4 > len(p.s) {
					return "", false
				}
				r, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
				if err != nil {
					return "", false
				}
				b.WriteRune(rune(r))
				p.i += 4
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

// seq reads a list or tuple up to close.
func (p *pyParser) seq(close byte) (json.RawMessage, bool) {
	p.i++
	p.depth++
	defer func() { p.depth-- }()
	var items []json.RawMessage
	for !p.eat(close) {
		if len(items) > 0 && !p.eat(',') {
			return nil, false
		}
		if p.eat(close) {
			break
		}
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		items = append(items, v)
	}
	if items == nil {
		return json.RawMessage("[]"), true
	}
	b, err := json.Marshal(items)
	return b, err == nil
}

// dict reads {key: value, …}; keys are strings or numbers.
func (p *pyParser) dict() (json.RawMessage, bool) {
	p.i++
	p.depth++
	defer func() { p.depth-- }()
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for !p.eat('}') {
		if n > 0 && !p.eat(',') {
			return nil, false
		}
		if p.eat('}') {
			break
		}
		k, ok := p.value()
		if !ok {
			return nil, false
		}
		if k[0] != '"' {
			k, _ = json.Marshal(string(k))
		}
		if !p.eat(':') {
			return nil, false
		}
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		if n > 0 {
			b.WriteString(", ")
		}
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
		n++
	}
	b.WriteByte('}')
	return json.RawMessage(b.String()), true
}

// pythonicStep reads a pythonic call list at the answer's start (state
// sPy): once it closes, its calls, or, when it is not one, text.
func (p *Parser) pythonicStep(final bool) {
	switch pyStart(p.held) {
	case wait:
		if final {
			p.notCall()
		}
		return
	case miss:
		p.notCall()
		return
	}
	end := pyListEnd(p.held, maxPythonic)
	if end < 0 {
		if final || len(p.held) >= maxPythonic {
			p.notCall()
		}
		return
	}
	calls, ok := pyCalls(p.held[:end])
	if !ok {
		p.notCall()
		return
	}
	raw := p.held[:end]
	for _, c := range calls {
		p.wholeCall(c.name, c.args, raw)
	}
	p.raw.Reset()
	p.held = p.held[end:]
	p.st = sPlain
}
