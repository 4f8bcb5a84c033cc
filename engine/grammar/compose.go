package grammar

import (
	"fmt"
	"strings"
)

// Composition: grammars built from literal texts and schemas rather than
// from one schema. A tool call (engine/toolcall) is a model family's
// wrapper text around a JSON object whose "name" picks the schema its
// "arguments" follow, e.g. for two Hermes-style tools
//
//	Switch(`<tool_call>\n{"name": "a", "arguments": `, `…"name": "b", …`)
//	  → Seq(Schema(a's parameters), Literal("}\n</tool_call>")) or b's
//
// The literal heads share their prefix, so the head written so far, not
// its first byte (as anyOf's alternatives), picks the continuation.

// Part is a piece of a grammar being composed.
type Part struct{ id int32 }

// Composer builds one grammar out of Parts; its Parts belong to it.
type Composer struct {
	c *compiler
}

// NewComposer starts an empty composition.
func NewComposer() *Composer { return &Composer{c: newCompiler(nil)} }

// Literal is exactly text, which must not be empty.
func (k *Composer) Literal(text string) (Part, error) {
	if text == "" {
		return Part{}, fmt.Errorf("grammar: an empty literal (leave it out of the sequence)")
	}
	if err := k.c.budget(len(text), "", ""); err != nil {
		return Part{}, err
	}
	id, err := k.c.add(node{kind: kLiteral, lit: newSmallTrie([]string{text})}, "")
	return Part{id}, err
}

// Schema is a document of schema, compiled as Compile does (its $refs
// resolve within it). Errors are *SchemaError.
func (k *Composer) Schema(schema []byte) (Part, error) {
	doc, err := decodeSchema(schema)
	if err != nil {
		return Part{}, err
	}
	c := k.c
	c.doc, c.refs = doc, map[string]int32{} // each schema is its own document
	id, err := c.schema(doc, "", 0)
	c.doc, c.refs = nil, map[string]int32{}
	return Part{id}, err
}

// AnyObject is any JSON object.
func (k *Composer) AnyObject() Part {
	k.c.anyValue()
	return Part{k.c.anyObj}
}

// Seq is parts one after the other, nothing between them.
func (k *Composer) Seq(parts ...Part) (Part, error) {
	if len(parts) == 0 {
		return Part{}, fmt.Errorf("grammar: an empty sequence")
	}
	seq := make([]int32, len(parts))
	for i, p := range parts {
		seq[i] = p.id
	}
	id, err := k.c.add(node{kind: kSeq, seq: seq}, "")
	return Part{id}, err
}

// Switch is heads[i] followed by then[i]: the head written picks what
// follows. No head may be empty or begin another (the automaton must know
// which head ended when its last byte comes).
func (k *Composer) Switch(heads []string, then []Part) (Part, error) {
	if len(heads) == 0 || len(heads) != len(then) {
		return Part{}, fmt.Errorf("grammar: a switch needs one continuation per head (%d heads, %d continuations)", len(heads), len(then))
	}
	size := 0
	for i, h := range heads {
		size += len(h)
		for j, o := range heads {
			if h == "" || i != j && strings.HasPrefix(o, h) {
				return Part{}, fmt.Errorf("grammar: switch head %q is empty or begins head %q", h, o)
			}
		}
	}
	if err := k.c.budget(size, "", ""); err != nil {
		return Part{}, err
	}
	next := make([]int32, len(then))
	for i, p := range then {
		next[i] = p.id
	}
	id, err := k.c.add(node{kind: kSwitch, lit: newSmallTrie(heads), seq: next}, "")
	return Part{id}, err
}

// Grammar finishes the composition: the grammar whose documents are
// root's. The Composer is spent.
func (k *Composer) Grammar(root Part) (*Grammar, error) {
	g, err := k.c.finish(root.id)
	k.c = nil
	return g, err
}

// seqByte runs a sequence: each part in turn gets the bytes until it is
// complete, then the next; after the last, the byte belongs to what
// surrounds the sequence.
func (m *machine) seqByte(f *frame, nd *node) result {
	if int(f.n) < len(nd.seq) {
		m.child = m.start(nd.seq[f.n])
		f.n++
		return rPush
	}
	return rPopRetry
}

// switchByte follows the heads' trie; the byte that completes a head
// makes the frame its continuation.
func (m *machine) switchByte(f *frame, nd *node, b byte) result {
	c := nd.lit.child(f.n, b)
	if c < 0 {
		return rReject
	}
	if i := nd.lit.term[c]; i >= 0 { // heads begin no other head: nothing longer
		m.child = m.start(nd.seq[i])
		return rConsumeReplace
	}
	f.n = c
	return rConsume
}
