package grammar

import "math"

// The pushdown automaton: a stack of frames, one per value being written
// (an object, the key inside it, the string inside that…), advanced one
// byte at a time. Every change to the stack can be journaled and undone,
// so the mask's trie walk (matcher.go) tries a byte, descends, and backs
// out again without copying the stack.

// frame is one value in progress. Its fields mean what its kind says.
type frame struct {
	node int32 // the value's node (a key: its object's node)
	// n: code points so far (string), items so far (array), the next
	// declared property that may come (object), trie node (literal, key;
	// -1: off the key trie; switch), digits in the current part
	// (number), parts started (sequence).
	n  int32
	m  int32 // object: the property the last key named, -1: undeclared
	k  kind
	st uint8 // the frame's own state (below)
	// sub: the string DFA state (string, key; strDead: a key that can
	// only be a declared name).
	sub uint8
	// ws is the whitespace run since the last JSON token (objects,
	// arrays): wsNone, wsSpace, or wsLine plus the indentation so far.
	ws uint8
}

// Frame states.
const (
	oStart = iota // object: before '{'
	oOpen         // after '{'
	oKey          // after ',': a key must come
	oColon        // after a key
	oValue        // after ':'
	oNext         // after a value: ',' or '}'
)

const (
	aStart = iota // array: before '['
	aOpen         // after '['
	aItem         // after ',': an item must come
	aNext         // after an item: ',' or ']'
)

const (
	strStart = iota // string: before '"'
	strIn           // inside
)

const (
	nStart = iota // number: before anything
	nMinus        // after '-'
	nZero         // a leading 0 (accepting)
	nInt          // integer digits (accepting)
	nDot          // after '.'
	nFrac         // fraction digits (accepting)
	nE            // after 'e'
	nESign        // after the exponent's sign
	nExp          // exponent digits (accepting)
)

// result is what a frame does with a byte.
type result uint8

const (
	rReject         result = iota
	rConsume               // the frame took the byte
	rConsumePop            // took it and is complete
	rPopRetry              // is complete; the byte belongs to the value around it
	rPush                  // starts a child value (m.child) that gets the byte
	rConsumePush           // took the byte and starts a child (m.child)
	rReplace               // becomes m.child (an alternative), which gets the byte
	rConsumeReplace        // took the byte and becomes m.child (a switch's continuation)
)

// undo restores one journaled change: the stack height and, when i >= 0,
// frame i.
type undo struct {
	f  frame
	i  int32
	sp int32
}

type machine struct {
	g     *Grammar
	st    [maxFrames]frame
	sp    int
	child frame // the frame a handler asks to push
	rec   bool  // journal changes
	log   []undo
}

func newMachine(g *Grammar) *machine {
	m := &machine{g: g}
	m.st[0] = m.start(g.root)
	m.sp = 1
	return m
}

// start is a fresh frame for node id.
func (m *machine) start(id int32) frame {
	return frame{node: id, k: m.g.nodes[id].kind, m: -1}
}

func (m *machine) set(i int, f frame) {
	if m.rec {
		m.log = append(m.log, undo{f: m.st[i], i: int32(i), sp: int32(m.sp)})
	}
	m.st[i] = f
}

func (m *machine) pop() {
	if m.rec {
		m.log = append(m.log, undo{i: -1, sp: int32(m.sp)})
	}
	m.sp--
}

func (m *machine) push(f frame) bool {
	if m.sp == maxFrames {
		return false
	}
	m.set(m.sp, f)
	m.sp++
	return true
}

// undoTo reverts every journaled change after mark (a length of log).
func (m *machine) undoTo(mark int) {
	for i := len(m.log) - 1; i >= mark; i-- {
		u := &m.log[i]
		if u.i >= 0 {
			m.st[u.i] = u.f
		}
		m.sp = int(u.sp)
	}
	m.log = m.log[:mark]
}

// step advances by one byte; false: no document continues so (the stack
// may then be half changed: callers journal and undo).
func (m *machine) step(b byte) bool {
	for m.sp > 0 {
		top := m.sp - 1
		f := m.st[top]
		nd := &m.g.nodes[f.node]
		var r result
		switch f.k {
		case kObject:
			r = m.object(&f, nd, b)
		case kKey:
			r = m.key(&f, nd, b)
		case kArray:
			r = m.array(&f, nd, b)
		case kString:
			r = stringByte(&f, nd, b)
		case kNumber:
			r = numberByte(&f, nd, b)
		case kLiteral:
			r = literalByte(&f, nd, b)
		case kAnyOf:
			alt := nd.first[b]
			if alt < 0 {
				return false
			}
			m.child, r = m.start(alt), rReplace
		case kSeq:
			r = m.seqByte(&f, nd)
		case kSwitch:
			r = m.switchByte(&f, nd, b)
		}
		switch r {
		case rConsume:
			m.set(top, f)
			return true
		case rConsumePop:
			m.pop()
			return true
		case rPopRetry:
			m.pop()
		case rPush:
			m.set(top, f)
			if !m.push(m.child) {
				return false
			}
		case rConsumePush:
			m.set(top, f)
			return m.push(m.child)
		case rReplace:
			m.set(top, m.child)
		case rConsumeReplace:
			m.set(top, m.child)
			return true
		default:
			return false
		}
	}
	return false
}

// canEnd reports whether the document is complete: the root value closed,
// or every value still open may end here: the innermost a number or
// literal that may, or a sequence past its last part, with only such
// sequences around it.
func (m *machine) canEnd() bool {
	for i := m.sp - 1; i >= 0; i-- {
		f := &m.st[i]
		switch {
		case f.k == kSeq && int(f.n) == len(m.g.nodes[f.node].seq):
		case i < m.sp-1:
			return false
		case f.k == kNumber:
			if f.st != nZero && f.st != nInt && f.st != nFrac && f.st != nExp {
				return false
			}
		case f.k == kLiteral:
			if m.g.nodes[f.node].lit.term[f.n] < 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// inString reports whether the top frame is inside a string (or an
// undeclared object key): its string DFA state and how many more
// characters it may take.
func (m *machine) inString() (s uint8, room int32, ok bool) {
	if m.sp == 0 {
		return 0, 0, false
	}
	f := &m.st[m.sp-1]
	switch {
	case f.k == kString && f.st == strIn:
		room = math.MaxInt32
		if mx := m.g.nodes[f.node].maxLen; mx >= 0 {
			room = mx - f.n
		}
		return f.sub, room, true
	case f.k == kKey && f.n < 0 && f.sub != strDead:
		return f.sub, math.MaxInt32, true
	}
	return 0, 0, false
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// Whitespace runs: nothing, one space, or a newline and at most
// MaxIndent spaces or tabs (llama.cpp's JSON grammars' rule).
const (
	wsNone  = 0
	wsSpace = 1
	wsLine  = 2 // + the indentation's length
)

// space takes a whitespace byte between two JSON tokens.
func space(f *frame, b byte) result {
	switch {
	case f.ws == wsNone && b == ' ':
		f.ws = wsSpace
	case f.ws == wsNone && b == '\n':
		f.ws = wsLine
	case f.ws >= wsLine && (b == ' ' || b == '\t') && f.ws-wsLine < MaxIndent:
		f.ws++
	default:
		return rReject
	}
	return rConsume
}

func (m *machine) object(f *frame, nd *node, b byte) result {
	if f.st == oStart {
		if b != '{' {
			return rReject
		}
		f.st = oOpen
		return rConsume
	}
	if isSpace(b) {
		return space(f, b)
	}
	f.ws = wsNone
	nprops := int32(len(nd.props))
	closes := nd.firstReq[f.n] == nprops // no required property is left
	undeclared := nd.addl >= 0 && closes
	switch f.st {
	case oOpen, oKey, oNext:
		switch {
		case b == '}' && f.st != oKey && closes:
			return rConsumePop
		case b == ',' && f.st == oNext && (f.n < nprops || undeclared):
			f.st = oKey
			return rConsume
		case b == '"' && f.st != oNext && (f.n < nprops || undeclared):
			f.st = oColon
			k := frame{node: f.node, k: kKey, n: -1, sub: strDead}
			if nprops > 0 { // follow the declared names, if only to refuse duplicates
				k.n = 0
			}
			if undeclared {
				k.sub = sNormal
				if nd.noEsc {
					k.sub += strNoEsc
				}
			}
			m.child = k
			return rConsumePush
		}
	case oColon:
		if b == ':' {
			f.st = oValue
			return rConsume
		}
	case oValue:
		v := nd.addl
		if f.m >= 0 {
			v = nd.props[f.m]
		}
		f.st = oNext
		m.child = m.start(v)
		return rPush
	}
	return rReject
}

// key follows an object key: along the declared names' trie (f.n) and,
// when undeclared keys may come, as any string (f.sub). The closing quote
// tells the object which property's value comes next.
func (m *machine) key(f *frame, nd *node, b byte) result {
	obj := m.st[m.sp-2]
	nprops := int32(len(nd.props))
	lo, hi := obj.n, min(nd.firstReq[obj.n], nprops-1) // the declared keys that may come
	if b == '"' {
		if f.n >= 0 && nd.keys.term[f.n] >= 0 { // a declared name: only where it may come
			p := nd.keys.term[f.n]
			if p < lo || p > hi {
				return rReject
			}
			obj.m, obj.n = p, p+1
			m.set(m.sp-2, obj)
			return rConsumePop
		}
		if f.sub == sNormal || f.sub == sNormal+strNoEsc { // an undeclared key
			obj.m, obj.n = -1, nprops
			m.set(m.sp-2, obj)
			return rConsumePop
		}
	}
	pos := int32(-1)
	if f.n >= 0 {
		pos = nd.keys.child(f.n, b)
	}
	sub := uint8(strDead)
	if f.sub != strDead {
		sub = strNext[f.sub][b]
	}
	if sub >= strClose && (pos < 0 || lo > hi || !nd.keys.reaches(pos, lo, hi)) {
		return rReject
	}
	f.n, f.sub = pos, min(sub, strDead)
	return rConsume
}

func (m *machine) array(f *frame, nd *node, b byte) result {
	if f.st == aStart {
		if b != '[' {
			return rReject
		}
		f.st = aOpen
		return rConsume
	}
	if isSpace(b) {
		return space(f, b)
	}
	f.ws = wsNone
	switch f.st {
	case aOpen, aNext:
		if b == ']' && f.n >= nd.minItems {
			return rConsumePop
		}
		if f.st == aNext {
			if b == ',' && (nd.maxItems < 0 || f.n < nd.maxItems) {
				f.st = aItem
				return rConsume
			}
			return rReject
		}
		if nd.maxItems == 0 {
			return rReject
		}
		fallthrough
	case aItem:
		f.st = aNext
		f.n++
		m.child = m.start(nd.items)
		return rPush
	}
	return rReject
}

func stringByte(f *frame, nd *node, b byte) result {
	if f.st == strStart {
		if b != '"' {
			return rReject
		}
		f.st, f.sub = strIn, sNormal
		return rConsume
	}
	next := strNext[f.sub][b]
	switch next {
	case strClose:
		if f.n < nd.minLen {
			return rReject
		}
		return rConsumePop
	case strDead:
		return rReject
	}
	if strStartsChar(f.sub) {
		if nd.maxLen >= 0 && f.n >= nd.maxLen {
			return rReject
		}
		f.n++
	}
	f.sub = next
	return rConsume
}

func numberByte(f *frame, nd *node, b byte) result {
	digit := b >= '0' && b <= '9'
	accepting := false
	switch f.st {
	case nStart, nMinus:
		switch {
		case b == '-' && f.st == nStart:
			f.st = nMinus
			return rConsume
		case b == '0':
			f.st = nZero
			return rConsume
		case digit:
			f.st, f.n = nInt, 1
			return rConsume
		}
		return rReject
	case nZero, nInt:
		if digit && f.st == nInt && f.n < MaxIntDigits {
			f.n++
			return rConsume
		}
		if !nd.integer {
			switch b {
			case '.':
				f.st = nDot
				return rConsume
			case 'e', 'E':
				f.st = nE
				return rConsume
			}
		}
		accepting = true
	case nDot:
		if digit {
			f.st, f.n = nFrac, 1
			return rConsume
		}
	case nFrac:
		if digit && f.n < MaxFracDigits {
			f.n++
			return rConsume
		}
		if b == 'e' || b == 'E' {
			f.st = nE
			return rConsume
		}
		accepting = true
	case nE:
		if b == '+' || b == '-' {
			f.st = nESign
			return rConsume
		}
		fallthrough
	case nESign:
		if digit {
			f.st, f.n = nExp, 1
			return rConsume
		}
	case nExp:
		if digit && f.n < MaxExpDigits {
			f.n++
			return rConsume
		}
		accepting = true
	}
	if accepting {
		return rPopRetry
	}
	return rReject
}

func literalByte(f *frame, nd *node, b byte) result {
	t := nd.lit
	if c := t.child(f.n, b); c >= 0 {
		f.n = c
		if t.term[c] >= 0 && len(t.kids[c]) == 0 {
			return rConsumePop
		}
		return rConsume
	}
	if t.term[f.n] >= 0 {
		return rPopRetry
	}
	return rReject
}
