package toolcall

import "strings"

// ThinkSplitter splits a <think>…</think> block at an answer's start off
// the answer while it streams, pushed in pieces split anywhere: Reasoning
// events for the block's text, Text events for the rest. As llama.cpp's
// and vLLM's parsers do, only a block that begins the answer (after
// whitespace) is reasoning; a block left open at the end is all
// reasoning; the whitespace just inside the block and just after it is
// the template's layout, not text. What it holds back is bounded: a
// partial marker and a short run of whitespace.
type ThinkSplitter struct {
	st     splitState
	opened bool   // the generation prompt opened the block
	lead   bool   // whitespace here is layout: drop it
	held   string // text not yet decided on
	out    []Event
}

type splitState uint8

const (
	tStart  splitState = iota // the answer's start: a block may open
	tInside                   // inside the block: reasoning
	tAfter                    // after the block: answer text
	tPlain                    // no block: answer text as it comes
)

// maxHeldSpace bounds the whitespace held back: at the answer's start
// (before a block may open) and at the end of reasoning so far (which a
// closing marker would drop).
const maxHeldSpace = 256

// NewThinkSplitter splits answers; opened: the prompt ends inside a
// block (OpensThinking), so the answer starts as reasoning (a <think>
// the model writes again there is dropped).
func NewThinkSplitter(opened bool) *ThinkSplitter {
	return &ThinkSplitter{opened: opened}
}

// Push adds the next piece of the answer; the events are valid until
// the next call.
func (s *ThinkSplitter) Push(text string) []Event {
	s.out = s.out[:0]
	s.held += text
	s.run(false)
	return s.out
}

// Flush ends the answer: what was held goes out (an open block's text
// as reasoning).
func (s *ThinkSplitter) Flush() []Event {
	s.out = s.out[:0]
	s.run(true)
	switch s.st {
	case tInside:
		s.emit(Reasoning, strings.TrimRight(s.held, " \t\r\n"))
	default:
		s.emit(Text, s.held)
	}
	s.held = ""
	return s.out
}

// Thinking reports whether the answer is inside the block (so far).
func (s *ThinkSplitter) Thinking() bool { return s.st == tInside }

func (s *ThinkSplitter) emit(k Kind, text string) {
	if text == "" {
		return
	}
	if n := len(s.out); n > 0 && s.out[n-1].Kind == k {
		s.out[n-1].Text += text
		return
	}
	s.out = append(s.out, Event{Kind: k, Text: text})
}

func (s *ThinkSplitter) run(final bool) {
	for {
		st, n := s.st, len(s.held)
		s.step(final)
		if s.st == st && len(s.held) == n {
			return
		}
	}
}

func (s *ThinkSplitter) step(final bool) {
	switch s.st {
	case tStart:
		t := strings.TrimLeft(s.held, " \t\r\n")
		switch {
		case strings.HasPrefix(t, thinkOpen):
			s.held, s.st, s.lead = t[len(thinkOpen):], tInside, true
		case !final && len(s.held) <= maxHeldSpace && strings.HasPrefix(thinkOpen, t):
			// only whitespace, or the marker's beginning: wait
		case s.opened:
			s.held, s.st, s.lead = t, tInside, true
		default:
			s.st = tPlain
		}
	case tInside:
		if s.lead {
			s.held = strings.TrimLeft(s.held, " \t\r\n")
			if s.held == "" {
				return
			}
			s.lead = false
		}
		if i := strings.Index(s.held, thinkClose); i >= 0 {
			s.emit(Reasoning, strings.TrimRight(s.held[:i], " \t\r\n"))
			s.held, s.st, s.lead = s.held[i+len(thinkClose):], tAfter, true
			return
		}
		if final {
			return // Flush sends the rest
		}
		// Hold a partial closing marker, and the whitespace before it: the
		// marker would make it layout.
		keep := partialSuffix(s.held, thinkClose)
		body := s.held[:len(s.held)-keep]
		text := strings.TrimRight(body, " \t\r\n")
		if len(body)-len(text) > maxHeldSpace {
			text = body
		}
		s.emit(Reasoning, text)
		s.held = s.held[len(text):]
	case tAfter:
		if s.lead {
			s.held = strings.TrimLeft(s.held, " \t\r\n")
			if s.held == "" {
				return
			}
			s.lead = false
		}
		fallthrough
	case tPlain:
		s.emit(Text, s.held)
		s.held = ""
	}
}
