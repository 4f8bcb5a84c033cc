package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/format/gptq"
	"github.com/edgectl/edgectl/format/half"
)

// gptqTestLayer is one random GPTQ/AWQ layer as the test itself packs
// it, from the reference quantizers' loops (AutoGPTQ's pack, AutoAWQ's
// from_linear), not through format/gptq: codes [n][k], true zero points
// [n][G], fp16-exact scales [G][n] and g_idx.
type gptqTestLayer struct {
	cfg            gptq.Config
	n, k, gs       int
	codes, zeros   [][]uint8
	scales         []float32
	gIdx           []int32
	qweight, qzero []byte
	gIdxRaw        []byte // nil for AWQ
}

func (c *gptqTestLayer) groups() int { return (c.k + c.gs - 1) / c.gs }

// newGPTQTestLayer draws a layer: sym layers have z = 8; asym ones random
// zero points (1…15 in v1, which cannot store 0); desc_act layers a
// shuffled g_idx (g_idx[perm[i]] = i / group_size, as GPTQ's act-order
// writes it).
func newGPTQTestLayer(rng *rand.Rand, cfg gptq.Config, n, k int) *gptqTestLayer {
	gs := cfg.GroupSize
	if gs < 0 {
		gs = k
	}
	c := &gptqTestLayer{cfg: cfg, n: n, k: k, gs: gs}
	G := c.groups()
	c.gIdx = make([]int32, k)
	perm := make([]int, k)
	for i := range perm {
		perm[i] = i
	}
	if cfg.DescAct {
		rng.Shuffle(k, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	}
	for i, p := range perm {
		c.gIdx[p] = int32(i / gs)
	}
	c.codes, c.zeros = make([][]uint8, n), make([][]uint8, n)
	for r := range n {
		c.codes[r], c.zeros[r] = make([]uint8, k), make([]uint8, G)
		for i := range c.codes[r] {
			c.codes[r][i] = uint8(rng.IntN(16))
		}
		for g := range c.zeros[r] {
			switch {
			case cfg.Sym:
				c.zeros[r][g] = 8
			case cfg.Format == gptq.FormatGPTQ:
				c.zeros[r][g] = uint8(1 + rng.IntN(15))
			default:
				c.zeros[r][g] = uint8(rng.IntN(16))
			}
		}
	}
	c.scales = make([]float32, G*n)
	for i := range c.scales {
		c.scales[i] = half.F16ToF32(half.F32ToF16(float32(math.Exp(rng.NormFloat64()) * 0.01)))
	}
	c.pack()
	return c
}

// pack writes qweight, qzeros and g_idx as the reference quantizers do.
func (c *gptqTestLayer) pack() {
	awq := c.cfg.Method == gptq.MethodAWQ
	order := [8]int{0, 1, 2, 3, 4, 5, 6, 7}
	if awq {
		order = [8]int{0, 2, 4, 6, 1, 3, 5, 7}
	}
	n, k, G := c.n, c.k, c.groups()
	var qw []uint32
	if awq {
		qw = make([]uint32, k*n/8)
		for kk := range k {
			for col := range n / 8 {
				for i := range 8 {
					qw[kk*(n/8)+col] |= uint32(c.codes[8*col+order[i]][kk]) << (4 * i)
				}
			}
		}
	} else {
		qw = make([]uint32, k/8*n)
		for row := range k / 8 {
			for col := range n {
				for j := range 8 {
					qw[row*n+col] |= uint32(c.codes[col][8*row+j]) << (4 * j)
				}
			}
		}
	}
	qz := make([]uint32, G*n/8)
	for g := range G {
		for col := range n / 8 {
			for i := range 8 {
				z := uint32(c.zeros[8*col+order[i]][g])
				if c.cfg.Format == gptq.FormatGPTQ {
					z = (z - 1) & 15 // v1 stores z − 1
				}
				qz[g*(n/8)+col] |= z << (4 * i)
			}
		}
	}
	c.qweight, c.qzero = leWords(qw), leWords(qz)
	if !awq {
		g := make([]uint32, k)
		for i, v := range c.gIdx {
			g[i] = uint32(v)
		}
		c.gIdxRaw = leWords(g)
	}
}

func leWords(w []uint32) []byte {
	b := make([]byte, 4*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// weight is the float64 dequantized weight W[r][k] = s·(c − z).
func (c *gptqTestLayer) weight(r, k int) float64 {
	g := int(c.gIdx[k])
	return float64(c.scales[g*c.n+r]) * float64(int(c.codes[r][k])-int(c.zeros[r][g]))
}

// linear is the layer loaded as the engine loads it (format/gptq's
// reading, then repack), with g's shared layouts.
func (c *gptqTestLayer) linear(t *testing.T, g *gptqLoader) *gptqLinear {
	t.Helper()
	g.cfg = &c.cfg
	lay, err := c.cfg.Layout(c.n, c.k)
	must(t, err)
	gIdx, err := lay.GroupIndex(c.gIdxRaw)
	must(t, err)
	l, err := g.repack(lay, c.qweight, c.qzero, c.scales, gIdx)
	must(t, err)
	return l
}

// gptqTestConfigs are the layers the kernel tests draw: GPTQ v1 as edgectl
// writes it, asym and desc_act in v1 and v2, group sizes 32, 48, 64, 128
// and −1, K not a multiple of the group size, and AWQ.
func gptqTestConfigs() []struct {
	cfg  gptq.Config
	n, k int
} {
	v1 := gptq.Config{Method: gptq.MethodGPTQ, Bits: 4, GroupSize: 128, Sym: true, Format: gptq.FormatGPTQ}
	with := func(f func(c *gptq.Config)) gptq.Config { c := v1; f(&c); return c }
	return []struct {
		cfg  gptq.Config
		n, k int
	}{
		{v1, 24, 256},
		{v1, 16, 4096},
		{with(func(c *gptq.Config) { c.Sym, c.DescAct = false, true }), 24, 512},
		{with(func(c *gptq.Config) { c.Sym, c.DescAct, c.Format, c.GroupSize = false, true, gptq.FormatGPTQv2, 64 }), 24, 384},
		{with(func(c *gptq.Config) { c.Sym, c.Format, c.GroupSize = false, gptq.FormatGPTQv2, 32 }), 8, 160},
		{with(func(c *gptq.Config) { c.GroupSize = -1 }), 16, 96},
		{with(func(c *gptq.Config) { c.Sym, c.GroupSize = false, 48 }), 16, 240}, // groups padded to 64 slots
		{with(func(c *gptq.Config) {}), 16, 200},                                 // a short last group
		{with(func(c *gptq.Config) { c.Sym, c.DescAct = false, true }), 16, 200}, // and desc_act
		{gptq.Config{Method: gptq.MethodAWQ, Bits: 4, GroupSize: 64, Format: gptq.FormatGEMM}, 24, 256},
		{gptq.Config{Method: gptq.MethodAWQ, Bits: 4, GroupSize: 128, Format: gptq.FormatGEMM}, 32, 1024},
	}
}

// gptqDequantizedActs is row t of a's activations as the kernels see them
// in l's layout: x[k] = q·d of input k's slot (0 for an input no slot
// holds, which cannot happen).
func gptqDequantizedActs(a *acts, l *gptqLinear, t int) []float64 {
	x := make([]float64, l.c)
	f := a.gptq.form(l.lay).row(t)
	for s := range l.lay.slots() {
		k := s
		if l.lay.src != nil {
			k = int(l.lay.src[s])
		} else if s >= l.c {
			k = -1
		}
		if k >= 0 {
			x[k] = float64(f.q[s]) * float64(f.d[s/32])
		}
	}
	return x
}

// TestGPTQKernelsMatchDequantized checks every table's GPTQ/AWQ product
// (through gptqLinear: decode and a prefill batch) against the float64
// product of the test's own dequantized weights with the activations the
// kernels read (to float32 rounding: the block sums are exact), and
// against the float activations (to the Q8_0 quantization's error).
func TestGPTQKernelsMatchDequantized(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 60))
	for _, kern := range kernelSets() {
		for _, tc := range gptqTestConfigs() {
			t.Run(fmt.Sprintf("%s/%s/%dx%d", kern.name, tc.cfg.String(), tc.n, tc.k), func(t *testing.T) {
				c := newGPTQTestLayer(rng, tc.cfg, tc.n, tc.k)
				l := c.linear(t, &gptqLoader{})
				if l.lay.src == nil != (!tc.cfg.DescAct && tc.k%c.gs == 0 && c.gs%32 == 0) {
					t.Errorf("gathering: src %v for desc_act %v, K %d, group %d", l.lay.src != nil, tc.cfg.DescAct, tc.k, c.gs)
				}
				for _, n := range []int{1, 3} {
					a := quantTestActs(kern, rng, n, tc.k)
					a.prepare(l)
					out := make([]float32, n*tc.n)
					l.mul(out, tc.n, a, 0, tc.n)
					for tok := range n {
						xq := gptqDequantizedActs(a, l, tok)
						xf := a.f[tok*tc.k : (tok+1)*tc.k]
						for r := range tc.n {
							var want, mag, wantF, magF float64
							for k := range tc.k {
								w := c.weight(r, k)
								want += w * xq[k]
								g := int(c.gIdx[k])
								s := float64(c.scales[g*c.n+r])
								mag += math.Abs(s*float64(c.codes[r][k])*xq[k]) + math.Abs(s*float64(c.zeros[r][g])*xq[k])
								wantF += w * float64(xf[k])
								magF += math.Abs(w * float64(xf[k]))
							}
							got := float64(out[tok*tc.n+r])
							if math.Abs(got-want) > 3e-5*mag+1e-30 {
								t.Fatalf("%d tokens, token %d row %d: %v, dequantized %v (Σ|terms| %v)", n, tok, r, got, want, mag)
							}
							if math.Abs(got-wantF) > 0.02*magF+1e-30 {
								t.Fatalf("%d tokens, token %d row %d: %v, float activations %v (Σ|terms| %v)", n, tok, r, got, wantF, magF)
							}
						}
					}
				}
			})
		}
	}
}

// TestGPTQSIMDKernelsMatchPortable checks each SIMD table's GPTQ kernel
// against the portable one on the same layers and activations, to
// rounding.
func TestGPTQSIMDKernelsMatchPortable(t *testing.T) {
	sets := kernelSets()
	if len(sets) == 1 {
		t.Skip("no SIMD kernel table on this CPU")
	}
	rng := rand.New(rand.NewPCG(20, 61))
	for _, tc := range gptqTestConfigs() {
		c := newGPTQTestLayer(rng, tc.cfg, tc.n, tc.k)
		l := c.linear(t, &gptqLoader{})
		x := quantTestActs(sets[0], rng, 5, tc.k).f
		for _, kern := range sets[1:] {
			for _, n := range []int{1, 5} {
				a, p := &acts{kern: kern}, &acts{kern: sets[0]}
				a.reset(n, tc.k)
				p.reset(n, tc.k)
				copy(a.f, x)
				copy(p.f, x)
				a.prepare(l)
				p.prepare(l)
				got, want := make([]float32, n*tc.n), make([]float32, n*tc.n)
				l.mul(got, tc.n, a, 0, tc.n)
				l.mul(want, tc.n, p, 0, tc.n)
				for i := range got {
					tok, r := i/tc.n, i%tc.n
					xq := gptqDequantizedActs(p, l, tok)
					var mag float64
					for k := range tc.k {
						g := int(c.gIdx[k])
						mag += math.Abs(float64(c.scales[g*c.n+r]) * xq[k] * (float64(c.codes[r][k]) + float64(c.zeros[r][g])))
					}
					if math.Abs(float64(got[i]-want[i])) > 2e-5*mag+1e-30 {
						t.Fatalf("%s %s %d×%d, %d tokens, token %d row %d: %v, portable %v", kern.name, tc.cfg.String(), tc.n, tc.k, n, tok, r, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestGPTQLayoutsShared: matrices with the same g_idx share one layout,
// so a batch gathers and quantizes their activations once; the bias of a
// projection is added to its product.
func TestGPTQLayoutsShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 62))
	cfg := gptq.Config{Method: gptq.MethodGPTQ, Bits: 4, GroupSize: 128, DescAct: true, Format: gptq.FormatGPTQ}
	q := newGPTQTestLayer(rng, cfg, 16, 256)
	k := newGPTQTestLayer(rng, cfg, 8, 256)
	k.gIdx = q.gIdx
	k.pack()
	g := &gptqLoader{}
	lq, lk := q.linear(t, g), k.linear(t, g)
	if lq.lay != lk.lay || len(g.layouts) != 1 {
		t.Fatalf("same g_idx, %d layouts", len(g.layouts))
	}
	a := quantTestActs(hostKernels(t), rng, 2, 256)
	a.prepare(lq)
	a.prepare(lk)
	if a.gptq.live != 1 {
		t.Errorf("%d activation forms for one layout", a.gptq.live)
	}
	plain := make([]float32, 2*8)
	lk.mul(plain, 8, a, 0, 8)
	lk.bias = make([]float32, 8)
	for i := range lk.bias {
		lk.bias[i] = float32(i) + 0.5
	}
	biased := make([]float32, 2*8)
	lk.mul(biased, 8, a, 2, 7)
	for i := range biased {
		r := i % 8
		want := float32(0)
		if r >= 2 && r < 7 {
			want = plain[i] + lk.bias[r]
		}
		if biased[i] != want {
			t.Fatalf("row %d token %d: %v, want %v", r, i/8, biased[i], want)
		}
	}
}

// BenchmarkGPTQRows times one decode product of a 4096 × 4096 GPTQ matrix
// (group 128; 9.4 MB resident, more than the caches) on one core, per
// kernel table, beside Q4_0's kernel on the same shape as a yardstick;
// b.SetBytes counts the weight bytes read.
func BenchmarkGPTQRows(b *testing.B) {
	const n, k = 4096, 4096
	rng := rand.New(rand.NewPCG(20, 64))
	cfg := gptq.Config{Method: gptq.MethodGPTQ, Bits: 4, GroupSize: 128, Sym: true, Format: gptq.FormatGPTQ}
	c := newGPTQTestLayer(rng, cfg, n, k)
	lay, _ := cfg.Layout(n, k)
	gIdx, _ := lay.GroupIndex(c.gIdxRaw)
	l, err := (&gptqLoader{cfg: &cfg}).repack(lay, c.qweight, c.qzero, c.scales, gIdx)
	if err != nil {
		b.Fatal(err)
	}
	q40 := make([]byte, n*k/32*18)
	for i := range q40 {
		q40[i] = byte(rng.IntN(256))
	}
	for i := 0; i < len(q40); i += 18 {
		binary.LittleEndian.PutUint16(q40[i:], half.F32ToF16(0.01))
	}
	out := make([]float32, n)
	for _, kern := range kernelSets() {
		a := newActs(kern, rng, 1, k)
		a.prepare(l)
		x := a.gptq.form(l.lay).row(0)
		b.Run("gptq/"+kern.name, func(b *testing.B) {
			b.SetBytes(l.size())
			for b.Loop() {
				kern.gptq.rows(l.w, l.sm, x, out)
			}
		})
		b.Run("q4_0/"+kern.name, func(b *testing.B) {
			b.SetBytes(int64(len(q40)))
			xb := a.blockRow(formQ8_0, 0)
			for b.Loop() {
				kern.quant[typeQ4_0].rows(q40, xb, out)
			}
		})
	}
}

// BenchmarkGPTQRepack times loading one 4096 × 4096 GPTQ matrix (from the
// file's tensors to the engine's layout, all cores), in order and with a
// desc_act g_idx; b.SetBytes counts the weights.
func BenchmarkGPTQRepack(b *testing.B) {
	const n, k = 4096, 4096
	rng := rand.New(rand.NewPCG(20, 65))
	for _, desc := range []bool{false, true} {
		cfg := gptq.Config{Method: gptq.MethodGPTQ, Bits: 4, GroupSize: 128, DescAct: desc, Format: gptq.FormatGPTQ}
		c := newGPTQTestLayer(rng, cfg, n, k)
		lay, _ := cfg.Layout(n, k)
		gIdx, _ := lay.GroupIndex(c.gIdxRaw)
		b.Run(fmt.Sprintf("desc_act=%v", desc), func(b *testing.B) {
			b.SetBytes(n * k)
			for b.Loop() {
				if _, err := (&gptqLoader{cfg: &cfg}).repack(lay, c.qweight, c.qzero, c.scales, gIdx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
