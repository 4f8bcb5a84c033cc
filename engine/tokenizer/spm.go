package tokenizer

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// spm is SentencePiece in llama.cpp's score form (tokenizer.ggml.model =
// llama without merges: Llama 2, TinyLlama, Mistral v0.1 as llama.cpp's
// converter writes them). It tokenizes as llama.cpp's llm_tokenizer_spm
// does: the text is split into UTF-8 characters, then the adjacent pair
// whose concatenation is the highest-scoring vocabulary piece is merged,
// again and again, until no adjacent pair forms a piece. What is left that
// is not a piece falls back to <0xXX> byte tokens, else to unk.
type spm struct {
	scores []float32 // id → score; NaN read as the lowest
	// maxPiece is the longest vocabulary piece in bytes: a pair longer
	// than that cannot be a piece, so it is not looked up. It bounds the
	// bytes hashed per lookup, which keeps a long run of one character
	// from costing more than n·log n.
	maxPiece int
	// addSpacePrefix puts a space before the text and before every piece
	// of text that follows an added token (tokenizer.ggml.add_space_prefix).
	addSpacePrefix bool
	addEOS         bool
	// added are the tokens matched whole in the text before the SPM pass
	// (control, user-defined and unknown types), longest first.
	added []addedToken
}

// spmSymbol is a run of the text, linked to its neighbours.
type spmSymbol struct {
	start, n   int32 // bytes of the escaped text; n == 0: merged into its left neighbour
	prev, next int32 // -1 at the ends
}

// spmBigram is a candidate merge of two adjacent symbols into a piece.
type spmBigram struct {
	left, right int32
	size        int32 // left.n + right.n when queued: a changed symbol makes the entry stale
	score       float32
}

// before orders the queue as llama.cpp does: the higher score first, and
// on equal scores the pair further left.
func (a spmBigram) before(b spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

// spmQueue is a binary max-heap of bigrams.
type spmQueue []spmBigram

func (q *spmQueue) push(b spmBigram) {
	h := append(*q, b)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *spmQueue) pop() spmBigram {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, best := 2*i+1, i
		if l < len(h) && h[l].before(h[best]) {
			best = l
		}
		if r := l + 1; r < len(h) && h[r].before(h[best]) {
			best = r
		}
		if best == i {
			break
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
	*q = h
	return top
}

// spmStats counts a session's work, for the tests that hold its bound.
type spmStats struct {
	symbols, pushes, pops, lookups, lookedUpBytes int
}

// spmSession tokenizes one piece of text (spaces already escaped to ▁).
type spmSession struct {
	t     *Tokenizer
	text  string
	syms  []spmSymbol
	queue spmQueue
	stats spmStats
}

// utf8Len is the length of the UTF-8 sequence a lead byte announces, as
// llama.cpp's unicode_len_utf8 reads it: a stray continuation byte is a
// character of its own, and a sequence cut by the end of the text is
// shortened by the caller.
func utf8Len(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	}
	return 4
}

// encode appends the ids of text to ids. It looks at ctx every
// ctxCheckEvery pairs queued and merges.
func (s *spmSession) encode(ctx context.Context, ids []int) ([]int, error) {
	text := s.text
	if len(text) > math.MaxInt32 {
		return nil, fmt.Errorf("a text of %d bytes is beyond what the SentencePiece tokenizer indexes (2 GiB); send a shorter prompt", len(text))
	}
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		i := int32(len(s.syms))
		s.syms = append(s.syms, spmSymbol{start: int32(off), n: int32(n), prev: i - 1, next: i + 1})
		off += n
	}
	if len(s.syms) == 0 {
		return ids, nil
	}
	s.syms[len(s.syms)-1].next = -1
	s.stats.symbols = len(s.syms)
	for i := 1; i < len(s.syms); i++ {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		s.tryMerge(int32(i-1), int32(i))
	}
	for len(s.queue) > 0 {
		s.stats.pops++
		if s.stats.pops%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		b := s.queue.pop()
		l, r := &s.syms[b.left], &s.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // one side has changed since the pair was queued
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			s.syms[r.next].prev = b.left
		}
		s.tryMerge(l.prev, b.left)
		s.tryMerge(b.left, l.next)
	}
	for i := int32(0); i >= 0; i = s.syms[i].next {
		ids = s.t.spmSymbolIDs(ids, text[s.syms[i].start:s.syms[i].start+s.syms[i].n])
	}
	return ids, nil
}

// tryMerge queues the pair (left, right) when together they spell a piece.
func (s *spmSession) tryMerge(left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := s.syms[left], s.syms[right]
	n := l.n + r.n
	if int(n) > s.t.spm.maxPiece {
		return
	}
	s.stats.lookups++
	s.stats.lookedUpBytes += int(n)
	id, ok := s.t.vocab[s.text[l.start:l.start+n]]
	if !ok {
		return
	}
	s.stats.pushes++
	s.queue.push(spmBigram{left: left, right: right, size: n, score: s.t.spm.scores[id]})
}

// spmSymbolIDs appends the ids of one symbol left by the merges: itself
// when it is a piece (every merged symbol is), else a byte token for
// each of its bytes, else one unk. (llama.cpp also keeps a table of how
// merged symbols were made, to split one that is not a piece; a merge
// only ever makes a piece, so that path never runs and is left out.)
func (t *Tokenizer) spmSymbolIDs(ids []int, sym string) []int {
	if id, ok := t.vocab[sym]; ok {
		return append(ids, id)
	}
	for i := 0; i < len(sym); i++ {
		if t.byteToken[sym[i]] < 0 {
			// llama.cpp stops with an error here; unk keeps the
			// request alive and the text's length in tokens close.
			return append(ids, t.unk)
		}
	}
	for i := 0; i < len(sym); i++ {
		ids = append(ids, t.byteToken[sym[i]])
	}
	return ids
}

// spmFragment is a run of the text: raw text (id < 0) or an added token.
type spmFragment struct {
	start, end int
	id         int
}

// spmPartition splits text at added tokens as llama.cpp does: each added
// token in turn, longest first, takes every occurrence it finds, left to
// right, in the text earlier tokens left raw. (encode.go's addedFinder
// takes the earliest occurrence of any token instead; the two differ only
// when added tokens overlap in the text, and here llama.cpp's order is
// the one to match.) Its work is the text's length times the number of
// added tokens; ctx is looked at between tokens.
func (m *spm) partition(ctx context.Context, text string) ([]spmFragment, error) {
	if text == "" {
		return nil, nil // no raw text: not even the space prefix
	}
	frags := []spmFragment{{0, len(text), -1}}
	var next []spmFragment
	for i, a := range m.added {
		if a.content == "" {
			continue
		}
		if i%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		found := false
		next = next[:0]
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			pos := f.start
			for {
				j := strings.Index(text[pos:f.end], a.content)
				if j < 0 {
					break
				}
				found = true
				if j > 0 {
					next = append(next, spmFragment{pos, pos + j, -1})
				}
				pos += j + len(a.content)
				next = append(next, spmFragment{pos - len(a.content), pos, a.id})
			}
			if pos < f.end {
				next = append(next, spmFragment{pos, f.end, -1})
			}
		}
		if found {
			frags, next = next, frags
		}
	}
	return frags, nil
}

// encodeSPM is EncodeContext for a score-form SentencePiece vocabulary, as
// llama.cpp's tokenize does it: BOS when asked; added tokens matched
// whole; every piece of raw text that starts the text or follows an added
// token gets a leading space (add_space_prefix); spaces become ▁; EOS
// when the vocabulary asks for it.
func (t *Tokenizer) encodeSPM(ctx context.Context, text string, addSpecial bool) ([]int, error) {
	var ids []int
	if addSpecial && t.addBOS {
		ids = append(ids, t.bos)
	}
	frags, err := t.spm.partition(ctx, text)
	if err != nil {
		return nil, err
	}
	afterAdded := true
	for _, f := range frags {
		if f.id >= 0 {
			ids = append(ids, f.id)
			afterAdded = true
			continue
		}
		raw := text[f.start:f.end]
		if t.spm.addSpacePrefix && afterAdded {
			raw = " " + raw
		}
		s := &spmSession{t: t, text: strings.ReplaceAll(raw, " ", "▁")}
		if ids, err = s.encode(ctx, ids); err != nil {
			return nil, err
		}
		afterAdded = false
	}
	if addSpecial && t.spm.addEOS && len(t.eos) > 0 {
		ids = append(ids, t.eos[0])
	}
	return ids, nil
}

// decodeSPM is Decode as llama.cpp's detokenize does it (special tokens
// removed, not printed): a BOS first is dropped and the text after it kept
// as it is; otherwise, with add_space_prefix, the first token loses one
// leading space. So Decode(Encode(x, false)) == x, and Decode(Encode(x,
// true)) keeps the space the encoder put before x.
func (t *Tokenizer) decodeSPM(ids []int) string {
	strip := t.spm.addSpacePrefix
	if t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		strip = false
		ids = ids[1:]
	}
	var b []byte
	for i, id := range ids {
		if t.IsSpecial(id) {
			continue
		}
		p := t.Piece(id)
		if i == 0 && strip && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		b = append(b, p...)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
