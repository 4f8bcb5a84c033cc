package cpu

// GPTQ and AWQ int4 matrices (format/gptq has the file layouts). At load
// each matrix is repacked into one layout for both (gptq_load.go), which
// the kernels (gptq_kernels.go, gptq_amd64.s) multiply with activations in
// the Q8_0 block form (quant_acts.go), as llama.cpp multiplies Q4_1:
//
//	W[n][k] = s·(c − z)   per group of inputs, c the 4-bit code
//	out[n]  = Σ_g s_g·Σ_{b∈g} d_b·(Σ_{i∈b} c_i·q_i) + m_g·X_g
//
// with m_g = −s_g·z_g (exact in float32: an fp16 scale times a 4-bit zero)
// and X_g = Σ_{b∈g} d_b·Σ_{i∈b} q_i, the group's activation sum, computed
// once per token for every row. Each 32-block's Σ c·q is exact integer
// arithmetic.
//
// Inputs are placed in slots: group g owns slots [g·B·32, (g+1)·B·32),
// B = ceil(group_size/32) blocks, holding the group's inputs in
// ascending order and then zeros. For a checkpoint without desc_act (and
// every AWQ one) the slots are the inputs themselves when the group size
// is a multiple of 32 and K of the group size, and the products read the
// shared Q8_0 form of the activations. With desc_act (g_idx not
// k/group_size), or a short last group, the activations are gathered into
// slot order before they are quantized (acts.prepareGPTQ): once per batch
// and layout, and the q, k and v projections (gate and up) of a layer
// share their layout, since GPTQ orders the inputs by the same Hessian.
//
// Resident bytes per weight: 0.5 (codes) + 8/group_size (an f32 scale and
// f32 m per group): 0.5625 at group 128, against 0.52 in the file.

// gptqLayout is where a matrix's inputs sit: groups × blocks 32-wide
// blocks of slots. src maps a slot to its input (−1: padding); nil when
// slot i is input i (no gathering). Matrices with the same layout share
// one (the loader deduplicates), so their gathered activations are
// computed once.
type gptqLayout struct {
	k, groups, blocks int
	src               []int32
}

func (l *gptqLayout) slots() int { return l.groups * l.blocks * 32 }

// gptqLinear is a GPTQ/AWQ int4 matrix in the engine's layout: per row,
// per group, blocks 16-byte blocks of codes (byte j holds slot j in its
// low nibble and slot j+16 in its high one, GGUF's Q4 order) in w, and
// the group's s and m = −s·z in sm.
type gptqLinear struct {
	r, c     int
	lay      *gptqLayout
	w        []byte
	sm       []float32
	rowBytes int
	bias     []float32 // added to the output when the checkpoint has one the architecture does not read itself
	name     string    // "GPTQ-int4", "AWQ-int4"
}

func (l *gptqLinear) rows() int      { return l.r }
func (l *gptqLinear) cols() int      { return l.c }
func (l *gptqLinear) int8() bool     { return false } // its own forms (acts.prepare)
func (l *gptqLinear) size() int64    { return int64(len(l.w)) + 4*int64(len(l.sm)) }
func (l *gptqLinear) format() string { return l.name }

// gptqTile is the rows a prefill product multiplies with every token
// before the next ones: 16 rows of K = 4096 are 36 KB, read from L2 for
// every token after the first.
const gptqTile = 16

// mul runs decode's rows in one kernel call, and a batch's a tile of rows
// at a time for every token.
func (l *gptqLinear) mul(out []float32, ldo int, a *acts, r0, r1 int) {
	f := a.gptq.form(l.lay)
	rows, rb, sb := a.kern.gptq.rows, l.rowBytes, 2*l.lay.groups
	if a.n == 1 {
		rows(l.w[r0*rb:r1*rb], l.sm[r0*sb:r1*sb], f.row(0), out[r0:r1])
	} else {
		for r := r0; r < r1; r += gptqTile {
			e := min(r1, r+gptqTile)
			for t := range a.n {
				rows(l.w[r*rb:e*rb], l.sm[r*sb:e*sb], f.row(t), out[t*ldo+r:t*ldo+e])
			}
		}
	}
	if l.bias != nil {
		for t := range a.n {
			o := out[t*ldo+r0 : t*ldo+r1]
			for i, b := range l.bias[r0:r1] {
				o[i] += b
			}
		}
	}
}

// gptqX is one activation row in a layout's slot order, as the kernels
// read it: Q8_0 codes and scales per 32 slots, and each group's X_g.
type gptqX struct {
	q  []int8
	d  []float32
	xg []float32
}

// gptqForm is a batch's activations in one layout.
type gptqForm struct {
	lay       *gptqLayout
	q         []int8
	d         []float32
	sum       []int16
	xg        []float32
	ownQ      []int8 // gathered layouts' buffers (q, d, sum alias acts.blocks otherwise)
	ownD      []float32
	ownSum    []int16
	gathered  []float32
	slots, nb int
}

func (f *gptqForm) row(t int) gptqX {
	G := f.lay.groups
	return gptqX{q: f.q[t*f.slots : (t+1)*f.slots], d: f.d[t*f.nb : (t+1)*f.nb], xg: f.xg[t*G : (t+1)*G]}
}

// gptqActs are the forms a batch's GPTQ products read: forms[:live] are
// this batch's (acts.reset empties it; prepare adds one per layout).
type gptqActs struct {
	forms []gptqForm
	live  int
}

// form is lay's form of this batch (prepareGPTQ must have run).
func (g *gptqActs) form(lay *gptqLayout) *gptqForm {
	for i := range g.live {
		if g.forms[i].lay == lay {
			return &g.forms[i]
		}
	}
	panic("cpu: GPTQ product before its activations were prepared")
}

// prepareGPTQ computes lay's form of a's rows, once per batch.
func (a *acts) prepareGPTQ(lay *gptqLayout) {
	g := &a.gptq
	for i := range g.live {
		if g.forms[i].lay == lay {
			return
		}
	}
	if g.live == len(g.forms) {
		g.forms = append(g.forms, gptqForm{})
	}
	f := &g.forms[g.live]
	g.live++
	f.lay, f.slots, f.nb = lay, lay.slots(), lay.slots()/32
	if lay.src == nil {
		a.quantizeBlocks(formQ8_0)
		b := &a.blocks[formQ8_0]
		f.q, f.d, f.sum = b.q, b.d, b.sum
	} else {
		f.ownQ = grow(f.ownQ, a.n*f.slots)
		f.ownD = grow(f.ownD, a.n*f.nb)
		f.ownSum = grow(f.ownSum, a.n*f.nb)
		f.gathered = grow(f.gathered, f.slots)
		f.q, f.d, f.sum = f.ownQ, f.ownD, f.ownSum
		for t := range a.n {
			x := a.f[t*a.k : (t+1)*a.k]
			for i, k := range lay.src {
				if k < 0 {
					f.gathered[i] = 0
				} else {
					f.gathered[i] = x[k]
				}
			}
			quantQ8_0Go(f.gathered, f.q[t*f.slots:(t+1)*f.slots], f.d[t*f.nb:(t+1)*f.nb], f.sum[t*f.nb:(t+1)*f.nb])
		}
	}
	G, B := lay.groups, lay.blocks
	f.xg = grow(f.xg, a.n*G)
	for t := range a.n {
		d, sum := f.d[t*f.nb:(t+1)*f.nb], f.sum[t*f.nb:(t+1)*f.nb]
		for gi := range G {
			var s float32
			for b := gi * B; b < (gi+1)*B; b++ {
				s += d[b] * float32(sum[b])
			}
			f.xg[t*G+gi] = s
		}
	}
}
