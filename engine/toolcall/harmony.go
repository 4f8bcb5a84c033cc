package toolcall

import "strings"

// OpenAI's harmony format (gpt-oss): the answer is messages, each a
// header, `<|message|>` and a body ended by `<|end|>`, `<|call|>` or
// `<|return|>`, the next one beginning with `<|start|>assistant`. The
// header names the channel and, for a call, the recipient:
//
//	<|channel|>analysis<|message|>The user wants the weather…<|end|>
//	<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>
//
// (the recipient may also stand before the channel, as gpt-oss's chat
// template renders calls in the history: `assistant to=functions.get_weather<|channel|>commentary json<|message|>`).
// The analysis channel is the model's reasoning (Reasoning events, not
// answer text); final, and commentary without a recipient (a preamble to
// the user), are answer text; a message to functions.NAME is a call.
// Every marker is one special token.
const (
	hStart     = "<|start|>"
	hChannel   = "<|channel|>"
	hMessage   = "<|message|>"
	hConstrain = "<|constrain|>"
	hEnd       = "<|end|>"
	hCall      = "<|call|>"
	hReturn    = "<|return|>"
)

// hEnds are what end a message's body.
var hEnds = []string{hEnd, hCall, hReturn, hStart}

var harmonyFamily = &family{
	closers: []string{hCall, hEnd},
	named:   true,
}

// maxHeader bounds a header: longer, it is not one.
const maxHeader = 512

// harmonyHeader reads a message's header (state sHeader), up to
// <|message|>: a call goes to the arguments, any other channel to its body.
func (p *Parser) harmonyHeader(final bool) {
	t := strings.TrimLeft(p.held, " \t\r\n")
	t = strings.TrimPrefix(t, hStart)
	t = strings.TrimLeft(strings.TrimPrefix(t, "assistant"), " ")
	if t == "" || strings.HasPrefix(hChannel, t) || strings.HasPrefix("to=", t) || strings.HasPrefix(hStart+"assistant", strings.TrimLeft(p.held, " \t\r\n")) {
		if final {
			p.st, p.reasoning = sText, false // not a header after all: text
		}
		return
	}
	if !strings.HasPrefix(t, hChannel) && !strings.HasPrefix(t, "to=") || final && !strings.Contains(t, hMessage) {
		p.st, p.reasoning = sText, false // plain text: no harmony here
		return
	}
	i := strings.Index(t, hMessage)
	if i < 0 {
		if final || len(t) > maxHeader {
			p.st, p.reasoning = sText, false
		}
		return
	}
	header := t[:i]
	p.raw.Reset()
	p.raw.WriteString(p.held[:len(p.held)-len(t)+i+len(hMessage)])
	p.held = t[i+len(hMessage):]
	channel, recipient := harmonyRoute(header)
	if name, ok := strings.CutPrefix(recipient, "functions."); ok && namePattern.MatchString(name) {
		p.namedHead(name)
		return
	}
	p.raw.Reset()
	p.st, p.reasoning = sText, channel == "analysis"
}

// harmonyRoute is a header's channel and recipient (`to=…`).
func harmonyRoute(header string) (channel, recipient string) {
	if _, after, ok := strings.Cut(header, hChannel); ok {
		channel = strings.TrimSpace(after)
		if i := strings.IndexAny(channel, " <"); i >= 0 {
			channel = channel[:i]
		}
	}
	if _, after, ok := strings.Cut(header, "to="); ok {
		recipient = after
		if i := strings.IndexAny(recipient, " <"); i >= 0 {
			recipient = recipient[:i]
		}
	}
	return channel, recipient
}

// harmonyBody reads a message's body (state sText): reasoning or answer
// text up to the marker that ends it, then the next header.
func (p *Parser) harmonyBody(final bool) {
	at, end := firstMarker(p.held, hEnds)
	body := p.held
	if at >= 0 {
		body = p.held[:at]
	} else if !final {
		body = p.held[:len(p.held)-partialSuffixAny(p.held, hEnds)]
	}
	if p.reasoning {
		if body != "" {
			p.out = append(p.out, Event{Kind: Reasoning, Text: body})
		}
	} else {
		p.text(body, false)
	}
	p.held = p.held[len(body):]
	if at >= 0 {
		p.held = p.held[len(end):] // <|start|>: the header follows
		p.st, p.reasoning = sHeader, false
	}
}
