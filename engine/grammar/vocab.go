package grammar

import (
	"bytes"
	"runtime"
	"slices"
	"sync"
	"weak"
)

// maxTokenBytes bounds the tokens the trie holds; longer ones (no real
// vocabulary has them) are never allowed.
const maxTokenBytes = 1024

// Vocab is a vocabulary's token trie, built once per vocabulary: nodes in
// preorder (a subtree is a range of nodes, its tokens a range of tok), so
// the mask walk skips a rejected subtree with one jump.
type Vocab struct {
	size     int      // token ids
	pieces   [][]byte // per id: its bytes (what Accept follows)
	b        []byte   // per node: the byte from its parent (node 0 is the root)
	depth    []uint16 // per node: bytes from the root
	end      []int32  // per node: the first node after its subtree
	tokStart []int32  // per node (and one past the last): its first token in tok
	tok      []int32  // token ids, in node order
	// safe[n] has bit s when every token in n's subtree, read from n's
	// byte on, stays inside a JSON string whose DFA is in state s (no
	// closing quote, nothing invalid); span[n] is the most bytes that
	// reading takes. A string with room for span[n] more characters takes
	// the whole subtree unseen: inside strings a mask is mostly such jumps.
	safe []uint32
	span []uint16
	// maxSpan is the longest token; inside[s], built on first use, are the
	// tokens that stay inside a string from DFA state s: a mask inside a
	// string with room for any token starts as a copy of it (matcher.go).
	maxSpan int32
	inside  [nStrAll]struct {
		once sync.Once
		bits []uint64
	}
}

// insideBits is inside[s], walking the trie with the string DFA alone.
func (v *Vocab) insideBits(s uint8) []uint64 {
	in := &v.inside[s]
	in.once.Do(func() {
		bits := make([]uint64, (v.size+63)/64)
		state := make([]uint8, maxTokenBytes+1) // per depth
		state[0] = s
		for i, n := int32(1), int32(len(v.b)); i < n; {
			d := v.depth[i]
			t := strNext[state[d-1]][v.b[i]]
			if t >= strClose {
				i = v.end[i]
				continue
			}
			for _, id := range v.tok[v.tokStart[i]:v.tokStart[i+1]] {
				bits[id>>6] |= 1 << (id & 63)
			}
			state[d] = t
			i++
		}
		in.bits = bits
	})
	return in.bits
}

// Size is the number of token ids (the mask's length in bits).
func (v *Vocab) Size() int { return v.size }

// Nodes is the number of trie nodes (for benchmarks and reports).
func (v *Vocab) Nodes() int { return len(v.b) }

// NewVocab builds the trie of a vocabulary: pieces[id] is the bytes token
// id stands for; an empty piece (a special token) is never allowed.
func NewVocab(pieces [][]byte) *Vocab {
	var ids []int32
	for id, p := range pieces {
		if len(p) > 0 && len(p) <= maxTokenBytes {
			ids = append(ids, int32(id))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	v := &Vocab{size: len(pieces), pieces: pieces, b: []byte{0}, depth: []uint16{0}, end: []int32{0}, tokStart: []int32{0}}
	parent := []int32{-1}
	path := []int32{0} // path[d]: the node at depth d on the current branch
	var prev []byte
	for _, id := range ids {
		p := pieces[id]
		l := 0
		for l < len(prev) && l < len(p) && prev[l] == p[l] {
			l++
		}
		for len(path)-1 > l {
			v.end[path[len(path)-1]] = int32(len(v.b))
			path = path[:len(path)-1]
		}
		for d := l; d < len(p); d++ {
			n := int32(len(v.b))
			v.b = append(v.b, p[d])
			v.depth = append(v.depth, uint16(d+1))
			v.end = append(v.end, 0)
			v.tokStart = append(v.tokStart, int32(len(v.tok)))
			parent = append(parent, path[len(path)-1])
			path = append(path, n)
		}
		v.tok = append(v.tok, id) // ends at path[len(p)]: sorted order puts it before longer tokens
		prev = p
	}
	for _, n := range path {
		v.end[n] = int32(len(v.b))
	}
	v.tokStart = append(v.tokStart, int32(len(v.tok)))

	// safe and span, children before parents (reverse preorder).
	nodes := len(v.b)
	v.safe = make([]uint32, nodes)
	v.span = make([]uint16, nodes)
	const all = 1<<nStrAll - 1
	childSafe := make([]uint32, nodes)
	for i := range childSafe {
		childSafe[i] = all
	}
	for n := nodes - 1; n >= 1; n-- {
		var s uint32
		for st := 0; st < nStrAll; st++ {
			if t := strNext[st][v.b[n]]; t < strClose && childSafe[n]>>t&1 != 0 {
				s |= 1 << st
			}
		}
		v.safe[n] = s
		v.span[n]++
		v.maxSpan = max(v.maxSpan, int32(v.span[n]))
		p := parent[n]
		childSafe[p] &= s
		v.span[p] = max(v.span[p], v.span[n])
	}
	return v
}

// Pieces is what a vocabulary is read from (engine/tokenizer's Tokenizer).
type Pieces interface {
	VocabSize() int
	Piece(id int) []byte
	IsSpecial(id int) bool
}

// PiecesOf lists a tokenizer's token bytes, special tokens left empty.
func PiecesOf(tok Pieces) [][]byte {
	out := make([][]byte, tok.VocabSize())
	for id := range out {
		if !tok.IsSpecial(id) {
			out[id] = tok.Piece(id)
		}
	}
	return out
}

// vocabs caches one Vocab per tokenizer, for as long as the tokenizer
// lives (a model's sessions share it; an unloaded model's goes with it).
var vocabs struct {
	sync.Mutex
	m map[any]*cachedVocab
}

type cachedVocab struct {
	once sync.Once
	v    *Vocab
}

// VocabOf is tok's trie, built on first use and cached while tok lives.
func VocabOf[T any, P interface {
	*T
	Pieces
}](tok P) *Vocab {
	key := any(weak.Make((*T)(tok)))
	vocabs.Lock()
	if vocabs.m == nil {
		vocabs.m = map[any]*cachedVocab{}
	}
	e := vocabs.m[key]
	if e == nil {
		e = &cachedVocab{}
		vocabs.m[key] = e
		runtime.AddCleanup((*T)(tok), func(k any) {
			vocabs.Lock()
			delete(vocabs.m, k)
			vocabs.Unlock()
		}, key)
	}
	vocabs.Unlock()
	e.once.Do(func() { e.v = NewVocab(PiecesOf(tok)) })
	return e.v
}
