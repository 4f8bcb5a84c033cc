package cpu

import (
	"math"
	"sync"
)

// Attention over the cache, laid out head-major (see state): layer l's
// keys for KV head g are one run of positions, headDim floats each.
//
// The work is split into tasks of (token, KV head, span of positions).
// A task runs all the query heads that share the KV head (GQA: 4 on
// BitNet-2B) over its span block by block, so each block of keys and
// values comes from memory once: with the four-head kernels each row is
// loaded once for the four, otherwise it is read from L2 by the heads
// after the first. Run head by head over the whole cache, a 2048-position
// head (1 MiB of keys) fell out of L2 and was read four times. Within a
// task, blocks are merged with the running-max softmax (each head keeps
// its max, its sum of e^(x−max) and its unnormalized output).
//
// Decoding one token, each head's positions are split into spans so both
// cores share a long cache (five KV heads alone would split 3:2); the
// spans' partial results are merged afterwards the same way. Span
// boundaries depend only on the position count and the model's shape,
// never on the thread count, so the result does not either.
const (
	attnBlock   = 512 // positions per block: 256 KiB of keys and values at headDim 128
	attnMinSpan = 256 // positions per decode span, at least
	attnTasks   = 16  // decode tasks wanted (spans per KV head: attnTasks/kvHeads+1)
)

// attnPartial is one head's softmax state over some positions: max,
// Σ e^(x−max), and Σ e^(x−max)·v (headDim floats).
type attnPartial struct {
	m, s float32
	o    []float32
}

// merge folds b into a (a.o and b.o have the same length).
func (a *attnPartial) merge(kern *kernels, b attnPartial) {
	if b.s == 0 {
		return
	}
	if a.s == 0 {
		a.m, a.s = b.m, b.s
		copy(a.o, b.o)
		return
	}
	mx := max(a.m, b.m)
	ea, eb := float32(math.Exp(float64(a.m-mx))), float32(math.Exp(float64(b.m-mx)))
	a.m, a.s = mx, a.s*ea+b.s*eb
	if ea != 1 {
		for i := range a.o {
			a.o[i] *= ea
		}
	}
	kern.axpyF32(eb, b.o, a.o)
}

// attention computes s.att for the n new tokens against the whole cache.
func (s *state) attention(l, n int) {
	ar, kern := &s.m.arch, s.m.kern
	hd, qd := ar.headDim, ar.heads*ar.headDim
	group := ar.heads / ar.kvHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	// Decode: a few spans per KV head of at least attnMinSpan positions
	// each, no more: a span is a sequential read, and shorter ones lose
	// to each stream's ramp (BitNet-2B at 2048 positions: 4 spans per KV
	// head, 12.4 ms a token; 32, 14.6–16.5 ms; at 132 positions one span
	// per head, 3:2 across two cores, still beats two of 66: 1.25–1.39
	// against 1.31–1.55 ms). A batch has n·kvHeads tasks already: one
	// span each.
	end := s.pos + n
	span, spans := end, 1
	if n == 1 {
		spans = min(attnTasks/ar.kvHeads+1, max(1, end/attnMinSpan))
		span = (end + spans - 1) / spans
		spans = (end + span - 1) / span
	}
	if spans > 1 {
		s.part = grow(s.part, ar.heads*spans*(hd+2))
	}
	tasks := n * ar.kvHeads * spans
	s.m.pool.parallel(tasks, 1, func(lo, hi int) {
		buf := scoreBufs.Get().(*[]float32)
		defer scoreBufs.Put(buf)
		bl := min(attnBlock, span)
		scratch := grow(*buf, group*bl+2*group*hd)
		*buf = scratch
		scores, blockO, accO := scratch[:group*bl], scratch[group*bl:][:group*hd], scratch[group*bl+group*hd:]
		var accs [16]attnPartial // on the stack for groups up to 16
		acc := accs[:0]
		if group > len(accs) {
			acc = make([]attnPartial, 0, group)
		}
		acc = acc[:group]
		for task := lo; task < hi; task++ {
			t, g, c := task/(ar.kvHeads*spans), task/spans%ar.kvHeads, task%spans
			p0, p1 := c*span, min(s.pos+t+1, (c+1)*span)
			run := s.kvRun(l, g)
			q := s.q[t*qd+g*group*hd : t*qd+(g+1)*group*hd] // the group's query heads
			for i := range acc {
				acc[i] = attnPartial{o: accO[i*hd : (i+1)*hd]}
			}
			for b0 := p0; b0 < p1; b0 += attnBlock {
				b1 := min(p1, b0+attnBlock)
				k, v := s.kc[run+b0*hd:run+b1*hd], s.vc[run+b0*hd:run+b1*hd]
				attendGroup(kern, acc, q, k, v, hd, scale, scores[:group*(b1-b0)], blockO)
			}
			for i, a := range acc {
				h := g*group + i
				if spans == 1 {
					o := s.att[t*qd+h*hd : t*qd+(h+1)*hd]
					inv := 1 / a.s
					for j := range o {
						o[j] = a.o[j] * inv
					}
					continue
				}
				p := s.part[(h*spans+c)*(hd+2):][:hd+2]
				p[0], p[1] = a.m, a.s
				copy(p[2:], a.o)
			}
		}
	})
	if spans == 1 {
		return
	}
	// Merge each head's spans (n == 1).
	s.m.pool.parallel(ar.heads, 1, func(lo, hi int) {
		for h := lo; h < hi; h++ {
			o := s.att[h*hd : (h+1)*hd]
			a := attnPartial{o: o}
			for c := range spans {
				p := s.part[(h*spans+c)*(hd+2):][:hd+2]
				a.merge(kern, attnPartial{m: p[0], s: p[1], o: p[2:]})
			}
			inv := 1 / a.s
			for j := range o {
				o[j] *= inv
			}
		}
	})
}

// attendGroup merges into acc (one per query head of a KV group; q holds
// their vectors) the softmax state over one block of positions: keys k
// and values v (rows of hd floats). scores (len(acc) rows of the block's
// length) and o (len(acc)·hd) are scratch.
func attendGroup(kern *kernels, acc []attnPartial, q, k, v []float32, hd int, scale float32, scores, o []float32) {
	G, n := len(acc), len(scores)/len(acc)
	if hd == 128 && G == 4 && kern.attnScores4 != nil {
		// All four heads per pass over the keys, then over the values:
		// each row is read once for the group.
		kern.attnScores4(q, k, hd, n, scale, scores, n)
		var ms, ss [4]float32
		for i := range 4 {
			row := scores[i*n : (i+1)*n]
			ms[i] = kern.maxF32(row)
			ss[i] = kern.expSubSum(row, ms[i])
		}
		kern.attnMix4(scores, n, v, hd, n, o)
		for i := range acc {
			acc[i].merge(kern, attnPartial{m: ms[i], s: ss[i], o: o[i*hd : (i+1)*hd]})
		}
		return
	}
	for i := range acc {
		acc[i].merge(kern, attendHead(kern, q[i*hd:(i+1)*hd], k, v, hd, scale, scores[i*n:(i+1)*n], o[i*hd:(i+1)*hd]))
	}
}

// attendHead returns one head's softmax state over len(scores) positions
// (keys k, values v in rows of hd floats); scores and o (hd floats, the
// output) are scratch.
func attendHead(kern *kernels, q, k, v []float32, hd int, scale float32, scores, o []float32) attnPartial {
	n := len(scores)
	if hd == 128 && kern.attnScores != nil {
		// One call per head over every position (SIMD, q and o in
		// registers) instead of one per position.
		kern.attnScores(q, k, hd, n, scale, scores)
		mx := kern.maxF32(scores)
		sum := kern.expSubSum(scores, mx)
		kern.attnMix(scores, v, hd, n, o)
		return attnPartial{m: mx, s: sum, o: o}
	}
	for p := range n {
		scores[p] = kern.dotF32(q, k[p*hd:(p+1)*hd]) * scale
	}
	mx := kern.maxF32(scores)
	sum := kern.expSubSum(scores, mx)
	clear(o)
	for p := range n {
		kern.axpyF32(scores[p], v[p*hd:(p+1)*hd], o)
	}
	return attnPartial{m: mx, s: sum, o: o}
}

// scoreBufs recycles the tasks' scratch (scores and outputs; a chunk of
// tasks runs several times per layer per token, and allocating each
// showed in profiles).
var scoreBufs = sync.Pool{New: func() any { return new([]float32) }}

// The portable softmax and attention kernels (see kernels).

func maxF32Go(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// expSubSumGo computes softmax's numerators in float64 exp.
func expSubSumGo(x []float32, mx float32) float32 {
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		x[i] = e
		sum += e
	}
	return sum
}

func axpyF32Go(a float32, x, y []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}
