package cpu

import (
	"context"
	"fmt"
	"math"
	"runtime"
)

// state is one sequence's KV cache and scratch buffers.
//
// The cache is head-major: layer l's K rows for KV head h are one run of
// ctx rows of headDim floats, position p at row p (V alike), in one
// mapping reserved for the whole context and paged in as positions fill
// it. Attention reads each KV head's keys and values as one
// sequential stream, once for all the query heads that share it
// (attention.go). Position-major (all layers of a position together), a
// head's rows lay layers·kvDim floats apart, one page each; with the
// grouped tasks and kernels, BitNet-2B at 2048 cached positions spends
// 10–13 ms a token in attention against 22–29 ms before.
type state struct {
	m      *model
	pos    int       // tokens in the cache
	kc, vc []float32 // layers × kvHeads × ctx × headDim each, reserved at first use
	kvMem  []byte    // the mapping behind kc and vc (nil: Go memory)
	// kvFree unmaps kvMem if the state is dropped without release; release
	// cancels it (unmapping twice could unmap a later mapping reusing the
	// addresses, e.g. another model's weights).
	kvFree runtime.Cleanup

	x, xn, q, k, v, att, g, u, logits []float32
	part                              []float32 // attention's per-span results (decode)
	a, b                              acts
	cos, sin                          []float32
	// headless: forward stops after the last layer (embeddings read every
	// position's hidden state from x and need no logits).
	headless bool
}

// newState starts an empty sequence; its activations are quantized and
// multiplied with the model's kernels.
func newState(m *model) *state {
	s := &state{m: m}
	s.a.kern, s.b.kern = m.kern, m.kern
	return s
}

// reserveKV maps the cache for the model's whole context (address space
// only: pages are touched as positions are written).
func (s *state) reserveKV() error {
	ar := &s.m.arch
	n := ar.ctx * ar.layers * ar.kvHeads * ar.headDim
	b, mapped, err := reserveAnon(2 * 4 * n)
	if err != nil {
		return fmt.Errorf("reserving %d MiB of KV cache for a context of %d positions: %v; load the model with a smaller context (--ctx)",
			int64(ar.ctx)*ar.kvBytesPerPosition()>>20, ar.ctx, err)
	}
	f := viewF32(b, 2*n)
	s.kc, s.vc = f[:n:n], f[n:2*n:2*n]
	if mapped {
		s.kvMem = b
		s.kvFree = runtime.AddCleanup(s, freeAnon, b)
	}
	return nil
}

// release unmaps the cache now rather than when the state is collected.
func (s *state) release() {
	if s.kvMem != nil {
		s.kvFree.Stop()
		freeAnon(s.kvMem)
	}
	s.kc, s.vc, s.kvMem, s.pos = nil, nil, nil, 0
}

// kvRun is where layer l's rows for KV head h start in kc and vc
// (position p at +p·headDim).
func (s *state) kvRun(l, h int) int {
	ar := &s.m.arch
	return (l*ar.kvHeads + h) * ar.ctx * ar.headDim
}

// forward runs tokens through the model at positions s.pos… and appends
// them to the cache. It returns the logits of the last token. ctx is
// checked between layers so a long prefill stops promptly.
func (s *state) forward(ctx context.Context, tokens []int) ([]float32, error) {
	m, ar, kern := s.m, &s.m.arch, s.m.kern
	n := len(tokens)
	H, hd := ar.hidden, ar.headDim
	qd, kvd := ar.heads*hd, ar.kvHeads*hd
	s.x = grow(s.x, n*H)
	s.xn = grow(s.xn, n*H)
	s.q = grow(s.q, n*qd)
	s.k = grow(s.k, n*kvd)
	s.v = grow(s.v, n*kvd)
	s.att = grow(s.att, n*qd)
	s.g = grow(s.g, n*ar.ffn)
	s.u = grow(s.u, n*ar.ffn)
	for _, id := range tokens {
		if id < 0 || id >= ar.vocab {
			return nil, fmt.Errorf("token id %d is outside the model's vocabulary of %d (the tokenizer and the model's vocab size disagree: use the tokenizer that came with the model)", id, ar.vocab)
		}
	}
	if s.pos+n > ar.ctx {
		return nil, fmt.Errorf("%d positions exceed the context of %d", s.pos+n, ar.ctx)
	}
	for t, id := range tokens {
		m.w.embed.row(id, s.x[t*H:(t+1)*H])
	}
	s.ropeTables(n)
	if s.kc == nil {
		if err := s.reserveKV(); err != nil {
			return nil, err
		}
	}
	for l := range m.w.layers {
		if err := ctx.Err(); err != nil {
			s.truncate(s.pos)
			return nil, err
		}
		L := &m.w.layers[l]
		// attention
		s.a.reset(n, H)
		for t := range n {
			kern.rmsnorm(s.a.f[t*H:(t+1)*H], s.x[t*H:(t+1)*H], L.attnNorm, ar.eps)
		}
		m.matmulN(&s.a, []output{{s.q, qd}, {s.k, kvd}, {s.v, kvd}}, L.q, L.k, L.v)
		for t := range n {
			q, k, v := s.q[t*qd:(t+1)*qd], s.k[t*kvd:(t+1)*kvd], s.v[t*kvd:(t+1)*kvd]
			if L.qBias != nil {
				addBias(q, L.qBias, 1)
				addBias(k, L.kBias, 1)
				addBias(v, L.vBias, 1)
			}
			if L.qNorm != nil {
				for i := 0; i < qd; i += hd {
					kern.rmsnorm(q[i:i+hd], q[i:i+hd], L.qNorm, ar.eps)
				}
				for i := 0; i < kvd; i += hd {
					kern.rmsnorm(k[i:i+hd], k[i:i+hd], L.kNorm, ar.eps)
				}
			}
			for h := range ar.heads {
				s.rope(q[h*hd:(h+1)*hd], t)
			}
			for h := range ar.kvHeads {
				s.rope(k[h*hd:(h+1)*hd], t)
				at := s.kvRun(l, h) + (s.pos+t)*hd
				copy(s.kc[at:at+hd], k[h*hd:(h+1)*hd])
				copy(s.vc[at:at+hd], v[h*hd:(h+1)*hd])
			}
		}
		s.attention(l, n)
		s.b.reset(n, qd)
		if L.attnSubNorm != nil {
			for t := range n {
				kern.rmsnorm(s.b.f[t*qd:(t+1)*qd], s.att[t*qd:(t+1)*qd], L.attnSubNorm, ar.eps)
			}
		} else {
			copy(s.b.f, s.att[:n*qd])
		}
		m.matmulAdd(s.x, s.xn, L.o, &s.b)
		// feed-forward
		s.a.reset(n, H)
		for t := range n {
			kern.rmsnorm(s.a.f[t*H:(t+1)*H], s.x[t*H:(t+1)*H], L.ffnNorm, ar.eps)
		}
		F := ar.ffn
		m.gatedFFN(&s.a, s.g, s.u, L.gate, L.up, ar.relu2)
		s.b.reset(n, F)
		if L.ffnSubNorm != nil {
			for t := range n {
				kern.rmsnorm(s.b.f[t*F:(t+1)*F], s.g[t*F:(t+1)*F], L.ffnSubNorm, ar.eps)
			}
		} else {
			copy(s.b.f, s.g[:n*F])
		}
		m.matmulAdd(s.x, s.xn, L.down, &s.b)
	}
	s.pos += n
	if s.headless {
		return nil, nil
	}
	// Only the last token's logits are needed to continue.
	s.a.reset(1, H)
	kern.rmsnorm(s.a.f, s.x[(n-1)*H:n*H], m.w.norm, ar.eps)
	s.logits = grow(s.logits, ar.vocab)
	m.matmul(s.logits, m.w.head, &s.a)
	m.w.exact.rescore(s.a.kern, s.logits, s.a.f[:H])
	return s.logits, nil
}

// truncate forgets cached positions from p on.
func (s *state) truncate(p int) { s.pos = min(s.pos, p) }

func addBias(x, b []float32, n int) {
	d := len(b)
	for t := range n {
		row := x[t*d : (t+1)*d]
		for i := range row {
			row[i] += b[i]
		}
	}
}

// ropeTables fills cos/sin for positions s.pos … s.pos+n-1.
func (s *state) ropeTables(n int) {
	half := s.m.arch.headDim / 2
	s.cos = grow(s.cos, n*half)
	s.sin = grow(s.sin, n*half)
	for t := range n {
		p := float64(s.pos + t)
		for i, f := range s.m.freqs {
			sn, cs := math.Sincos(p * f)
			s.cos[t*half+i], s.sin[t*half+i] = float32(cs), float32(sn)
		}
	}
}

// rope rotates one head vector of token t (rotate-half pairs (i, i+hd/2),
// or interleaved pairs (2i, 2i+1) as GGUF llama weights expect).
func (s *state) rope(x []float32, t int) {
	half := len(x) / 2
	cs, sn := s.cos[t*half:(t+1)*half], s.sin[t*half:(t+1)*half]
	if s.m.arch.ropeInterleaved {
		for i := range half {
			a, b := x[2*i], x[2*i+1]
			x[2*i], x[2*i+1] = a*cs[i]-b*sn[i], a*sn[i]+b*cs[i]
		}
		return
	}
	for i := range half {
		a, b := x[i], x[i+half]
		x[i], x[i+half] = a*cs[i]-b*sn[i], a*sn[i]+b*cs[i]
	}
}

// matmul computes out = W·a for every row of a, split across cores.
// productAlign is the row multiple a product's chunks start on: 128,
// four of the 32-row blocks of Sherry's lookup layout (sherry_lut.go), so
// that its kernel gets whole groups of four blocks, which share each table
// load (with chunk edges on 32 rows, the blocks left over, one at a
// time, cost 7–18% of a product's time on the 12-layer model); a
// multiple of every other layout's groups
// (I2x4's 4, the float kernels' 16), and the chunks it makes are about
// the 1/8 lane they were.
const productAlign = 128

func (m *model) matmul(out []float32, w linear, a *acts) {
	a.prepare(w)
	rows := w.rows()
	m.pool.parallel(rows, productAlign, func(lo, hi int) { w.mul(out, rows, a, lo, hi) })
}

// output is where a product's rows go: token t's row r at buf[t·ld + r].
type output struct {
	buf []float32
	ld  int
}

// matmulN computes several products of the same input (q, k, v; gate, up)
// in one dispatch: one wake-up of the workers instead of one per matrix,
// which matters at ~120 products per decoded token.
func (m *model) matmulN(a *acts, outs []output, ws ...linear) {
	total := 0
	for _, w := range ws {
		a.prepare(w)
		total += w.rows()
	}
	m.pool.parallel(total, productAlign, func(lo, hi int) {
		base := 0
		for i, w := range ws {
			r := w.rows()
			if lo < base+r && hi > base {
				w.mul(outs[i].buf, outs[i].ld, a, max(lo, base)-base, min(hi, base+r)-base)
			}
			base += r
		}
	})
}

// matmulAdd is matmul followed by the residual add x += out, done by
// each chunk on its own rows (the same additions, off the serial path).
func (m *model) matmulAdd(x, out []float32, w linear, a *acts) {
	a.prepare(w)
	rows, n := w.rows(), a.n
	m.pool.parallel(rows, productAlign, func(lo, hi int) {
		w.mul(out, rows, a, lo, hi)
		for t := range n {
			xr, or := x[t*rows+lo:t*rows+hi], out[t*rows+lo:t*rows+hi]
			for i := range xr {
				xr[i] += or[i]
			}
		}
	})
}

// gatedFFN computes g = act(gate·a)·(up·a) (act relu² or SiLU).
//
// Decoding one token, the two products run as one dispatch of 2F rows
// whose lanes are gate's rows and up's rows, so each core streams one
// matrix front to back (alternating between the two matrices chunk by
// chunk measured 3–5% slower on BitNet-2B's gate/up), and the
// element-wise pass follows on the caller. With a batch (prefill), each
// chunk runs the same rows of both matrices and multiplies them itself,
// so the element-wise pass stays off the serial path.
func (m *model) gatedFFN(a *acts, g, u []float32, gate, up linear, relu2 bool) {
	a.prepare(gate)
	a.prepare(up)
	F, n, kern := gate.rows(), a.n, m.kern
	if n == 1 {
		m.pool.parallel(2*F, productAlign, func(lo, hi int) {
			if lo < F {
				gate.mul(g, F, a, lo, min(hi, F))
			}
			if hi > F {
				up.mul(u, F, a, max(lo, F)-F, hi-F)
			}
		})
		gateAct(kern, g[:F], u[:F], relu2)
		return
	}
	m.pool.parallel(F, productAlign, func(lo, hi int) {
		gate.mul(g, F, a, lo, hi)
		up.mul(u, F, a, lo, hi)
		for t := range n {
			gateAct(kern, g[t*F+lo:t*F+hi], u[t*F+lo:t*F+hi], relu2)
		}
	})
}

// gateAct sets g[i] = act(g[i])·u[i].
func gateAct(kern *kernels, g, u []float32, relu2 bool) {
	u = u[:len(g)]
	if relu2 {
		kern.relu2Mul(g, u)
		return
	}
	kern.siluMul(g, u)
}

// siluMulGo is the portable siluMul (see kernels).
func siluMulGo(g, u []float32) {
	u = u[:len(g)]
	for i, v := range g {
		g[i] = silu(v) * u[i]
	}
}

// relu2MulGo is the portable relu2Mul (see kernels); decoding, the
// branching scalar loop it replaced took 6 µs a layer.
func relu2MulGo(g, u []float32) {
	u = u[:len(g)]
	for i, v := range g {
		if v < 0 { // not max(v, 0): its NaN and ±0 rules cost a branch more
			v = 0
		}
		g[i] = v * v * u[i]
	}
}
