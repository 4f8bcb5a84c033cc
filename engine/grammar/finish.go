package grammar

import (
	"fmt"
	"slices"
)

// finish makes the compiled nodes runnable: alternatives flattened and
// merged until each first byte picks one, values that cannot end (a
// required property that requires itself) pruned or refused, key tries
// built.
func (c *compiler) finish(root int32) (*Grammar, error) {
	for id := range c.nodes {
		if c.nodes[id].kind == kAnyOf {
			if err := c.mergeAlts(int32(id)); err != nil {
				return nil, err
			}
		}
	}
	prod := c.productive()
	if !prod[root] {
		return nil, &SchemaError{Path: c.paths[root], Msg: "no finite document validates: a required value requires itself; make the recursion optional"}
	}
	for id := range c.nodes {
		n := &c.nodes[id]
		switch n.kind {
		case kAnyOf:
			n.alts = slices.DeleteFunc(n.alts, func(a int32) bool { return !prod[a] })
			if err := c.dispatch(int32(id)); err != nil {
				return nil, err
			}
		case kArray:
			if !prod[n.items] { // productive arrays then have minItems 0
				n.maxItems = 0
			}
		case kObject:
			if n.addl >= 0 && !prod[n.addl] {
				n.addl = -1
			}
			c.objectTables(int32(id), prod)
		}
	}
	return &Grammar{nodes: c.nodes, root: root}, nil
}

// mergeAlts flattens nested alternatives and merges those the first byte
// cannot tell apart where a union is one value (numbers, literal sets,
// equal strings); the rest must differ in their first byte (dispatch).
func (c *compiler) mergeAlts(id int32) error {
	var flat []int32
	seen := map[int32]bool{id: true}
	var walk func(a int32)
	walk = func(a int32) {
		if seen[a] {
			return
		}
		seen[a] = true
		if c.nodes[a].kind == kAnyOf {
			for _, b := range c.nodes[a].alts {
				walk(b)
			}
			return
		}
		flat = append(flat, a)
	}
	for _, a := range c.nodes[id].alts {
		walk(a)
	}
	kw, path := "anyOf", c.paths[id]
	if c.oneOf[id] {
		kw = "oneOf"
	}
	var out []int32
	var lits []string
	litAt := -1
	for _, a := range flat {
		n := c.nodes[a]
		j := slices.IndexFunc(out, func(o int32) bool { return c.nodes[o].kind == n.kind })
		switch {
		case n.kind == kLiteral:
			for _, t := range c.texts(a) {
				if slices.Contains(lits, t) {
					if c.oneOf[id] {
						return &SchemaError{Keyword: kw, Path: path, Msg: fmt.Sprintf("two alternatives allow %s, so it matches more than one; remove the duplicate", t)}
					}
					continue
				}
				lits = append(lits, t)
			}
			if litAt < 0 {
				litAt = len(out)
				out = append(out, a)
			}
			continue
		case j < 0:
			out = append(out, a)
			continue
		case n.kind == kNumber:
			if c.oneOf[id] && c.nodes[out[j]].integer != n.integer {
				return &SchemaError{Keyword: kw, Path: path, Msg: "an integer matches both the integer and the number alternative; use anyOf"}
			}
			if !n.integer {
				out[j] = a
			}
			continue
		case n.kind == kString && !c.oneOf[id] && n.minLen == c.nodes[out[j]].minLen && n.maxLen == c.nodes[out[j]].maxLen:
			continue
		}
		return &SchemaError{Keyword: kw, Path: path, Msg: fmt.Sprintf(
			"two alternatives are %ss: edgectl picks an alternative by its first character, so at most one object, one array and one string (or string enum) may be offered; merge them", kindName(n.kind))}
	}
	if litAt >= 0 && len(c.texts(out[litAt])) != len(lits) {
		lid, err := c.add(node{kind: kLiteral, lit: newSmallTrie(lits)}, path)
		if err != nil {
			return err
		}
		out[litAt] = lid
	}
	c.nodes[id].alts = out
	return nil
}

// texts are a literal node's JSON texts.
func (c *compiler) texts(id int32) []string {
	t := c.nodes[id].lit
	var out []string
	var walk func(n int32, prefix []byte)
	walk = func(n int32, prefix []byte) {
		if t.term[n] >= 0 {
			out = append(out, string(prefix))
		}
		for _, e := range t.kids[n] {
			walk(e.to, append(prefix, e.b))
		}
	}
	walk(0, nil)
	return out
}

func kindName(k kind) string {
	return [...]string{kObject: "object", kArray: "array", kString: "string", kNumber: "number", kLiteral: "literal",
		kAnyOf: "alternative", kKey: "key", kPending: "reference", kSeq: "sequence", kSwitch: "switch"}[k]
}

// firstBytes are the bytes a value of node id may start with.
func (c *compiler) firstBytes(id int32) []byte {
	n := c.nodes[id]
	switch n.kind {
	case kObject:
		return []byte{'{'}
	case kArray:
		return []byte{'['}
	case kString:
		return []byte{'"'}
	case kNumber:
		return []byte("-0123456789")
	case kLiteral, kSwitch:
		var out []byte
		for _, e := range n.lit.kids[0] {
			out = append(out, e.b)
		}
		return out
	case kSeq:
		return c.firstBytes(n.seq[0])
	}
	return nil
}

// dispatch builds an anyOf's first-byte table.
func (c *compiler) dispatch(id int32) error {
	first := new([256]int32)
	for i := range first {
		first[i] = -1
	}
	for _, a := range c.nodes[id].alts {
		for _, b := range c.firstBytes(a) {
			if first[b] >= 0 {
				kw := "anyOf"
				if c.oneOf[id] {
					kw = "oneOf"
				}
				return &SchemaError{Keyword: kw, Path: c.paths[id], Msg: fmt.Sprintf(
					"a %s and a %s alternative both start with %q: edgectl picks an alternative by its first character; merge them",
					kindName(c.nodes[first[b]].kind), kindName(c.nodes[a].kind), b)}
			}
			first[b] = a
		}
	}
	c.nodes[id].first = first
	return nil
}

// productive marks the nodes some finite document satisfies (a least
// fixpoint over the node graph, by worklist).
func (c *compiler) productive() []bool {
	prod := make([]bool, len(c.nodes))
	need := make([]int, len(c.nodes)) // objects: unproductive required props; arrays: 1 while items is
	users := make([][]int32, len(c.nodes))
	var work []int32
	for id, n := range c.nodes {
		switch n.kind {
		case kObject:
			for i, p := range n.props {
				if c.required[id][i] {
					need[id]++
					users[p] = append(users[p], int32(id))
				}
			}
		case kArray:
			if n.minItems > 0 {
				need[id] = 1
				users[n.items] = append(users[n.items], int32(id))
			}
		case kAnyOf:
			need[id] = 1
			for _, a := range n.alts {
				users[a] = append(users[a], int32(id))
			}
		case kSeq, kSwitch: // every part, every continuation (a head must not lead nowhere)
			need[id] = len(n.seq)
			for _, a := range n.seq {
				users[a] = append(users[a], int32(id))
			}
		}
		if need[id] == 0 {
			prod[id] = true
			work = append(work, int32(id))
		}
	}
	for len(work) > 0 {
		p := work[len(work)-1]
		work = work[:len(work)-1]
		for _, u := range users[p] {
			if prod[u] {
				continue
			}
			if need[u]--; need[u] == 0 {
				prod[u] = true
				work = append(work, u)
			}
		}
	}
	return prod
}

// objectTables drops optional properties no document can give a value
// and builds the key trie and firstReq.
func (c *compiler) objectTables(id int32, prod []bool) {
	n := &c.nodes[id]
	req := c.required[id]
	var props []int32
	var names []string
	var keep []bool
	for i, p := range n.props {
		if prod[p] || req[i] { // an unproductive required one makes the object unproductive: never started
			props = append(props, p)
			names = append(names, n.names[i])
			keep = append(keep, req[i])
		}
	}
	n.props, n.names = props, names
	n.firstReq = make([]int32, len(props)+1)
	n.firstReq[len(props)] = int32(len(props))
	for i := len(props) - 1; i >= 0; i-- {
		n.firstReq[i] = n.firstReq[i+1]
		if keep[i] {
			n.firstReq[i] = int32(i)
		}
	}
	if len(names) > 0 {
		n.keys = newSmallTrie(names)
	}
}
