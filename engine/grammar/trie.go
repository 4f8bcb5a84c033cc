package grammar

import "slices"

// smallTrie holds a schema's short byte strings (enum values, property
// names) for the automaton to follow byte by byte. Node 0 is the root.
type smallTrie struct {
	kids [][]trieEdge // per node, sorted by byte
	term []int32      // the string ending at a node, -1: none
	// under[n] lists, sorted, the strings ending in n's subtree (keys: is
	// one of the properties that may come next still reachable?).
	under [][]int32
}

type trieEdge struct {
	b  byte
	to int32
}

func newSmallTrie(strs []string) *smallTrie {
	t := &smallTrie{kids: [][]trieEdge{nil}, term: []int32{-1}, under: [][]int32{nil}}
	for i, s := range strs {
		n := int32(0)
		t.under[0] = append(t.under[0], int32(i))
		for j := 0; j < len(s); j++ {
			c := t.child(n, s[j])
			if c < 0 {
				c = int32(len(t.term))
				t.kids = append(t.kids, nil)
				t.term = append(t.term, -1)
				t.under = append(t.under, nil)
				k := t.kids[n]
				at, _ := slices.BinarySearchFunc(k, s[j], func(e trieEdge, b byte) int { return int(e.b) - int(b) })
				t.kids[n] = slices.Insert(k, at, trieEdge{s[j], c})
			}
			n = c
			t.under[n] = append(t.under[n], int32(i))
		}
		if t.term[n] < 0 {
			t.term[n] = int32(i)
		}
	}
	return t
}

// child is the node after byte b from n, -1 when no string continues so.
func (t *smallTrie) child(n int32, b byte) int32 {
	for _, e := range t.kids[n] {
		if e.b == b {
			return e.to
		}
		if e.b > b {
			break
		}
	}
	return -1
}

// reaches reports whether a string with index in [lo, hi] ends in n's
// subtree.
func (t *smallTrie) reaches(n, lo, hi int32) bool {
	u := t.under[n]
	i, _ := slices.BinarySearch(u, lo)
	return i < len(u) && u[i] <= hi
}
