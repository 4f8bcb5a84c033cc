package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/edgectl/edgectl/engine"
)

// Matcher follows one generation: which tokens may come next (Allowed),
// the token that came (Accept), and whether the document is complete
// (CanEnd) or cannot go on (Done).
type Matcher struct {
	m    *machine
	v    *Vocab
	eos  []int
	bits []uint64
	// Per trie depth during Allowed: the journal length after that node's
	// byte, and whether the walk is still inside the string it began in.
	marks  []int
	within []bool
	// special are tokens the vocabulary trie leaves out (special tokens
	// have no text there) that this matcher takes as text: a model
	// family's tool-call marker, such as Mistral's [TOOL_CALLS].
	special []specialToken
}

type specialToken struct {
	id   int
	text []byte
}

// AllowSpecial lets the grammar take special token id as text: the token
// is allowed wherever text may come next, and Accept follows text.
func (x *Matcher) AllowSpecial(id int, text []byte) {
	if id >= 0 && id < x.v.size && len(text) > 0 {
		x.special = append(x.special, specialToken{id, text})
	}
}

// NewMatcher starts a document of g on vocabulary v; eos are the model's
// end-of-generation tokens, allowed exactly when the document is complete.
func NewMatcher(g *Grammar, v *Vocab, eos []int) *Matcher {
	return &Matcher{m: newMachine(g), v: v, eos: eos, bits: make([]uint64, (v.size+63)/64)}
}

// ForRequest is the matcher for a request's format on tok's vocabulary
// (cached per tokenizer: VocabOf).
func ForRequest[T any, P interface {
	*T
	Pieces
}](f *engine.Format, tok P, eos []int) (*Matcher, error) {
	g, err := ForFormat(f)
	if err != nil {
		return nil, err
	}
	return NewMatcher(g, VocabOf(tok), eos), nil
}

// Allowed marks the tokens that may come next: bit id%64 of word id/64.
// The slice is the matcher's own, valid until its next call.
//
// It walks the vocabulary trie in preorder with the automaton, undoing
// each byte on the way back up and skipping every subtree whose first
// byte is rejected. Inside a string, a subtree that stays inside it
// (Vocab.safe) is taken unseen; when the string began before this token
// and has room for any token, all such tokens are one copy
// (Vocab.insideBits) and only subtrees that can close the string are
// walked.
func (x *Matcher) Allowed() []uint64 {
	v, m := x.v, x.m
	m.rec = true
	base := len(m.log)
	if x.marks == nil {
		x.marks = make([]int, maxTokenBytes+1)
		x.within = make([]bool, maxTokenBytes+1)
	}
	marks, within := x.marks, x.within
	marks[0] = base
	sp0 := m.sp
	if s, room, ok := m.inString(); ok && room >= v.maxSpan {
		copy(x.bits, v.insideBits(s))
		within[0] = true
	} else {
		clear(x.bits)
		within[0] = false
	}
	set := func(lo, hi int32) {
		for _, id := range v.tok[lo:hi] {
			x.bits[id>>6] |= 1 << (id & 63)
		}
	}
	for i, n := int32(1), int32(len(v.b)); i < n; {
		d := v.depth[i]
		m.undoTo(marks[d-1])
		if s, room, ok := m.inString(); ok && v.safe[i]>>s&1 != 0 && int32(v.span[i]) <= room {
			if !within[d-1] { // else the copy holds them
				set(v.tokStart[i], v.tokStart[v.end[i]])
			}
			i = v.end[i]
			continue
		}
		if !m.step(v.b[i]) {
			i = v.end[i]
			continue
		}
		set(v.tokStart[i], v.tokStart[i+1])
		within[d] = within[d-1] && m.sp == sp0 // still the string the token began in
		marks[d] = len(m.log)
		i++
	}
	for _, sp := range x.special {
		m.undoTo(base)
		ok := true
		for _, b := range sp.text {
			if ok = m.step(b); !ok {
				break
			}
		}
		if ok {
			x.bits[sp.id>>6] |= 1 << (sp.id & 63)
		}
	}
	m.undoTo(base)
	m.rec = false
	end := m.canEnd()
	for _, id := range x.eos {
		if id >= 0 && id < x.v.size {
			if end {
				x.bits[id>>6] |= 1 << (id & 63)
			} else {
				x.bits[id>>6] &^= 1 << (id & 63)
			}
		}
	}
	return x.bits
}

// Accept advances by token id's bytes; an error (the state unchanged)
// when the grammar does not allow it. An EOS token is accepted when the
// document is complete.
func (x *Matcher) Accept(id int) error {
	for _, e := range x.eos {
		if e == id {
			if x.m.canEnd() {
				return nil
			}
			return fmt.Errorf("token %d ends generation before the JSON document is complete", id)
		}
	}
	var piece []byte
	if id >= 0 && id < len(x.v.pieces) {
		piece = x.v.pieces[id]
	}
	for _, sp := range x.special {
		if sp.id == id {
			piece = sp.text
		}
	}
	if len(piece) == 0 || len(piece) > maxTokenBytes {
		return fmt.Errorf("token %d is not part of the structured-output vocabulary (a special token)", id)
	}
	m := x.m
	m.rec = true
	base := len(m.log)
	for _, b := range piece {
		if !m.step(b) {
			m.undoTo(base)
			m.rec = false
			return fmt.Errorf("token %d (%q) does not continue the JSON document", id, piece)
		}
	}
	m.log = m.log[:base]
	m.rec = false
	return nil
}

// Expected lists the bytes that may come next, quoted, for errors: when no
// token allows any of them, the vocabulary cannot spell the document.
func (x *Matcher) Expected() string {
	m := x.m
	m.rec = true
	base := len(m.log)
	var out []string
	for b := 0; b < 256; b++ {
		if m.step(byte(b)) {
			if len(out) == 8 {
				out = append(out, "…")
				break
			}
			if b < utf8.RuneSelf {
				out = append(out, strconv.Quote(string(rune(b))))
			} else {
				out = append(out, fmt.Sprintf("0x%02X", b))
			}
		}
		m.undoTo(base)
	}
	m.undoTo(base)
	m.rec = false
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, " or ")
}

// CanEnd reports whether the document is complete (EOS may come).
func (x *Matcher) CanEnd() bool { return x.m.canEnd() }

// Done reports whether the document is complete and no byte can extend
// it: generation stops there.
func (x *Matcher) Done() bool {
	m := x.m
	if !m.canEnd() {
		return false
	}
	if m.sp == 0 {
		return true
	}
	m.rec = true
	base := len(m.log)
	defer func() { m.undoTo(base); m.rec = false }()
	for b := 0; b < 256; b++ {
		if m.step(byte(b)) {
			return false
		}
		m.undoTo(base)
	}
	return true
}
