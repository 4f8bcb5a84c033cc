package cpu

import (
	"sync"
)

// Weight placement. Packed weights and float matrices are copied out of the
// file mapping into anonymous memory at load, unless settings.mmap. The
// reason is measured, not assumed: on the VM class edgectl benchmarks on,
// streaming reads of page-cache (mmapped file) pages ran at 1–3 GB/s while
// anonymous memory ran at 20–33 GB/s, and decode speed is bounded by that
// read rate. The copy costs the same resident memory the mapping would
// (its own pages are released as soon as they are copied), so memory stays
// proportional to the model, not to the file handling.

// maxUnmappedReserve is the largest KV cache reserved in Go memory where
// an address-space reservation is not available: Go memory is committed
// at once, so it must be memory the machine has.
const maxUnmappedReserve = 1 << 30

// arena owns the anonymous copies of a model's weights.
type arena struct {
	mu   sync.Mutex
	bufs [][]byte
	mmap bool // keep file-mapped bytes instead of copying them
}

// own returns b itself (mmap mode) or a copy in anonymous memory, releasing
// the mapping's pages of b.
func (a *arena) own(b []byte) []byte {
	if a.mmap || len(b) == 0 {
		return b
	}
	c, mapped := allocAnon(len(b))
	copy(c, b)
	releaseMapped(b)
	if mapped {
		a.mu.Lock()
		a.bufs = append(a.bufs, c)
		a.mu.Unlock()
	}
	return c
}

func (a *arena) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.bufs {
		freeAnon(b)
	}
	a.bufs = nil
	return nil
}

// headForm is the form a float LM head is held in: head (see settings)
// "q4x", "q3x", "q2x" (4-, 3- and 2-bit blocks, the top candidates
// re-scored exactly, head4x.go), "q4" (4-bit blocks, head4.go), "q8"
// (int8 per row) or "float" (the file's dtype) as asked, and by default
// ternaryHead for models whose layers are ternary — for BitNet-2B the
// F16 tied head is 55% of the bytes a decode step reads — and float for
// others.
func (m *model) headForm(head string) string {
	if isHeadForm(head) {
		return head
	}
	if len(m.w.layers) == 0 {
		return "float"
	}
	if _, tern := m.w.layers[0].gate.(*ternLinear); tern {
		return ternaryHead
	}
	return "float"
}

// place moves every weight matrix of m into anonymous memory (unless
// set.mmap) and repacks ternary ones for the SIMD kernels of m.kern (see
// repack).
func (m *model) place(set settings) {
	m.mem = &arena{mmap: set.mmap}
	i2x4 := m.kern.hasI2x4() && !set.plainI2
	m.closers = append(m.closers, m.mem)
	done := map[linear]linear{}
	var put func(l linear) linear
	put = func(l linear) linear {
		if l == nil {
			return nil
		}
		if r, ok := done[l]; ok {
			return r
		}
		out := l
		switch w := l.(type) {
		case *floatRows:
			w.raw = m.mem.own(w.raw)
			if w.dt == "F32" {
				w.f32 = viewF32(w.raw, w.r*w.c)
			}
		case *ternLinear:
			r := w
			if !set.nativePacking {
				r = repackFor(m.kern, w, m.mem, i2x4)
			}
			if r != w {
				if !w.owned {
					releaseMapped(w.data)
				}
				out = r
			} else if !w.owned {
				w.data = m.mem.own(w.data)
			}
		case *quantLinear:
			w.raw = m.mem.own(w.raw)
		case *scaledLinear:
			w.linear = put(w.linear)
		}
		done[l] = out
		return out
	}
	if f, ok := m.w.head.(*floatRows); ok && m.headForm(set.head) != "float" {
		q := compactHead(f, m.headForm(set.head), m.mem)
		m.w.head = q
		if _, blocks := q.(*quantLinear); blocks && blockHeads[m.headForm(set.head)].k > 0 {
			// f stays the file's rows (not put in the arena): see head4x.go.
			m.w.exact = &exactHead{f: f, k: blockHeads[m.headForm(set.head)].k}
		}
		done[q] = q // built in the arena already
		if m.w.embed == f {
			// Lookups read one row per token: the file mapping will do.
			done[f] = f
		}
	}
	m.w.embed = put(m.w.embed).(embedding)
	m.w.head = put(m.w.head)
	for i := range m.w.layers {
		L := &m.w.layers[i]
		for _, w := range []*linear{&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down} {
			*w = put(*w)
		}
	}
}

// alloc returns n bytes of anonymous memory the arena frees on Close.
func (a *arena) alloc(n int) []byte {
	b, mapped := allocAnon(n)
	if mapped {
		a.mu.Lock()
		a.bufs = append(a.bufs, b)
		a.mu.Unlock()
	}
	return b
}
