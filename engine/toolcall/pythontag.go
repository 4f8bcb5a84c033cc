package toolcall

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Llama 3.1's built-in tools are called after its `<|python_tag|>` token
// (Meta's Llama 3.1 prompt format; llama.cpp's common/chat.cpp reads them
// so, docs/serve.md "Tool calls"):
//
//	<|python_tag|>brave_search.call(query="weather in Oslo")
//	<|python_tag|>wolfram_alpha.call(query="solve x^2 = 4")
//	<|python_tag|>import math\nprint(math.sqrt(2))     (code_interpreter)
//
// A `name.call(` head is a call of name, its keyword arguments read into
// a JSON object once the parenthesis closes (values as JSON or Python
// literals; at most maxPythonic bytes); JSON after the tag is the usual
// JSON call; anything else is code for the code interpreter, streamed as
// the call's `code` argument until the answer ends. The tag may come
// after text, which stays the answer's. functionary v3.1 (Llama 3.1
// based) uses the tag for its python tool: the rest of the answer is its
// code.

// codeTool is the call a Llama answer's code after the tag becomes
// (Meta's built-in tool name); pythonTool functionary v3.1's.
const (
	codeTool   = "code_interpreter"
	pythonTool = "python"
)

// tagStep reads what follows `<|python_tag|>` (state sTag).
func (p *Parser) tagStep(final bool) {
	if p.f != Llama {
		p.beginCode(pythonTool)
		return
	}
	t := strings.TrimLeft(p.held, " \t\r\n")
	if t == "" {
		if final { // a tag and nothing after it: wrapper, not answer
			p.raw.Reset()
			p.held = ""
			p.st = sPlain
		}
		return
	}
	if t[0] == '{' { // the JSON call form
		p.raw.WriteString(p.held[:len(p.held)-len(t)])
		p.held = t
		p.st = sOpen
		return
	}
	head, m := builtinHead(t)
	switch {
	case m == wait && !final && len(t) <= 160: // a name is at most 64 bytes (namePattern)
		return
	case m != got:
		p.beginCode(codeTool)
		return
	}
	end := pyListEnd(t[head-1:], maxPythonic) // from the '(' to its ')'
	if end < 0 {
		if final || len(t) >= maxPythonic {
			p.beginCode(codeTool)
		}
		return
	}
	end += head - 1
	name := strings.TrimSpace(t[:strings.IndexByte(t, '.')])
	pp := &pyParser{s: t[head-1 : end]}
	args, ok := pp.kwargs()
	if !ok || pp.rest() != "" || !namePattern.MatchString(name) {
		p.beginCode(codeTool)
		return
	}
	p.raw.WriteString(p.held[:len(p.held)-len(t)+end])
	p.held = t[end:]
	p.wholeCall(name, args, p.raw.String())
	p.raw.Reset()
	p.st = sPlain
}

// plainStep sends a Llama answer's text (state sPlain) up to a
// <|python_tag|>, which begins a call after the text.
func (p *Parser) plainStep() {
	if i := strings.Index(p.held, pythonTag); i >= 0 {
		p.text(p.held[:i], false)
		p.raw.Reset()
		p.raw.WriteString(p.spaces + pythonTag) // spaces before a call are not answer text
		p.spaces = ""
		p.held = p.held[i+len(pythonTag):]
		p.st = sTag
		return
	}
	keep := partialSuffix(p.held, pythonTag)
	p.text(p.held[:len(p.held)-keep], false)
	p.held = p.held[len(p.held)-keep:]
}

// builtinHead reports whether s begins `name.call(` (spaces allowed
// around the dot, as llama.cpp reads it): got with the length up to and
// including '(', wait while it may, miss when it does not.
func builtinHead(s string) (int, match) {
	i := 0
	skip := func() {
		for i < len(s) && strings.IndexByte(" \t", s[i]) >= 0 {
			i++
		}
	}
	n := i
	for i < len(s) && isIdent(s[i], i > n) {
		i++
	}
	switch {
	case i == len(s):
		return 0, wait
	case i == n:
		return 0, miss
	}
	skip()
	if i == len(s) {
		return 0, wait
	}
	if s[i] != '.' {
		return 0, miss
	}
	i++
	skip()
	const call = "call("
	rest := s[i:]
	switch {
	case strings.HasPrefix(rest, call):
		return i + len(call), got
	case strings.HasPrefix(call, rest):
		return 0, wait
	}
	return 0, miss
}

// wholeCall sends a call read whole (raw its text): its start, arguments
// and end.
func (p *Parser) wholeCall(name, args, raw string) {
	id := p.f.NewID()
	p.out = append(p.out, Event{Kind: Start, Index: p.calls, Call: Call{ID: id, Name: name}},
		Event{Kind: Args, Index: p.calls, Text: args},
		Event{Kind: End, Index: p.calls, Call: Call{ID: id, Name: name, Arguments: args, Raw: raw, Valid: true}})
	p.calls++
}

// beginCode starts a call of tool whose one argument, code, is the rest
// of the answer (state sCode).
func (p *Parser) beginCode(tool string) {
	p.id, p.name = p.f.NewID(), tool
	p.out = append(p.out, Event{Kind: Start, Index: p.calls, Call: Call{ID: p.id, Name: tool}},
		Event{Kind: Args, Index: p.calls, Text: codeOpen})
	p.calls++
	p.code.Reset()
	p.st = sCode
}

const codeOpen, codeClose = `{"code": "`, `"}`

// codeStep streams held text as the code argument's JSON string content;
// an unfinished UTF-8 sequence at the end waits for the rest.
func (p *Parser) codeStep(final bool) {
	n := len(p.held)
	if !final {
		n -= partialRune(p.held)
	}
	if n == 0 {
		return
	}
	p.raw.WriteString(p.held[:n])
	p.code.WriteString(p.held[:n])
	p.out = append(p.out, Event{Kind: Args, Index: p.calls - 1, Text: jsonStringBody(p.held[:n])})
	p.held = p.held[n:]
}

// endCode ends the code call: the answer is over.
func (p *Parser) endCode() {
	p.codeStep(true)
	p.out = append(p.out, Event{Kind: Args, Index: p.calls - 1, Text: codeClose})
	args := codeOpen + jsonStringBody(p.code.String()) + codeClose
	p.out = append(p.out, Event{Kind: End, Index: p.calls - 1, Call: Call{ID: p.id, Name: p.name, Arguments: args, Raw: p.raw.String(), Valid: true}})
	p.raw.Reset()
	p.code.Reset()
}

// partialRune is the length of s's last bytes when they begin a UTF-8
// sequence that is not complete yet.
func partialRune(s string) int {
	for n := 1; n <= min(utf8.UTFMax-1, len(s)); n++ {
		if tail := s[len(s)-n:]; utf8.RuneStart(tail[0]) {
			if !utf8.FullRuneInString(tail) {
				return n
			}
			return 0
		}
	}
	return 0
}

// jsonStringBody is s as a JSON string's content (no quotes, HTML left
// as it is): pieces of a text escape to pieces of its whole escape.
func jsonStringBody(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}
