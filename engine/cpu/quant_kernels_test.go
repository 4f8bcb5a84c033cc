package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
)

// quantTestRows is rows × k weights of type typ: odd rows quantized from
// normal values (with outliers) by format/gguf's quantizers, even rows
// random bytes, each block redrawn until its values are finite and
// moderate (random fp16 scales can be NaN, infinite or huge) — every code
// bit pattern, scales of both signs.
func quantTestRows(t *testing.T, rng *rand.Rand, typ gguf.Type, rows, k int) []byte {
	bs, ts := int(typ.BlockSize()), int(typ.TypeSize())
	out := make([]byte, 0, rows*k/bs*ts)
	x := make([]float32, k)
	y := make([]float32, bs)
	for r := range rows {
		if r%2 == 1 {
			sd := math.Exp(rng.NormFloat64())
			for i := range x {
				x[i] = float32(rng.NormFloat64() * sd)
				if rng.IntN(50) == 0 {
					x[i] *= 8
				}
			}
			b, err := gguf.Quantize(typ, x)
			must(t, err)
			out = append(out, b...)
			continue
		}
		for range k / bs {
			blk := make([]byte, ts)
			for {
				for i := range blk {
					blk[i] = byte(rng.IntN(256))
				}
				must(t, gguf.Dequantize(typ, blk, y))
				if moderate(y) {
					break
				}
			}
			out = append(out, blk...)
		}
	}
	return out
}

func moderate(y []float32) bool {
	for _, v := range y {
		if !(math.Abs(float64(v)) < 1e4) {
			return false
		}
	}
	return true
}

// quantTestActs is n activation rows of width k: normal values of varied
// scale, and (row 1) ±1 only, so that every code is ±127.
func quantTestActs(kern *kernels, rng *rand.Rand, n, k int) *acts {
	a := newActs(kern, rng, n, k)
	for t := range n {
		sd := float32(math.Exp(rng.NormFloat64()))
		for i := range k {
			v := &a.f[t*k+i]
			if t == 1 {
				*v = float32(2*rng.IntN(2) - 1)
			} else {
				*v *= sd
			}
		}
	}
	return a
}

// quantDotReference is the float64 dot of a row's dequantized weights
// (format/gguf) with the dequantized activations (q·d), and Σ|terms|.
func quantDotReference(typ gguf.Type, form blockForm, w []byte, x q8Blocks) (dot, mag float64) {
	wf := make([]float32, len(x.q))
	if err := gguf.Dequantize(typ, w, wf); err != nil {
		panic(err)
	}
	for i, q := range x.q {
		term := float64(wf[i]) * float64(q) * float64(x.d[i/form.blockLen()])
		dot += term
		mag += math.Abs(term)
	}
	return dot, mag
}

// TestQuantKernelsMatchDequantized checks every table's kernel of every
// block type (the portable ones first) against the float64 product of
// the dequantized weights and activations: the integer block sums are
// exact, so they agree to float32 rounding of the block terms.
func TestQuantKernelsMatchDequantized(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 3))
	for _, kern := range kernelSets() {
		for qt := range numQuantTypes {
			typ, form := quantTypes[qt].gguf, quantTypes[qt].form
			t.Run(kern.name+"/"+typ.String(), func(t *testing.T) {
				for _, k := range quantTestWidths(typ) {
					const rows = 6
					w := quantTestRows(t, rng, typ, rows, k)
					rb := int(typ.RowSize(int64(k)))
					a := quantTestActs(kern, rng, 3, k)
					a.quantizeBlocks(form)
					for tok := range a.n {
						x := a.blockRow(form, tok)
						for r := range rows {
							var got [1]float32
							kern.quant[qt].rows(w[r*rb:(r+1)*rb], x, got[:])
							want, mag := quantDotReference(typ, form, w[r*rb:(r+1)*rb], x)
							if math.Abs(float64(got[0])-want) > 2e-5*mag+1e-30 {
								t.Fatalf("k %d token %d row %d: %v, dequantized %v (Σ|terms| %v)", k, tok, r, got[0], want, mag)
							}
						}
					}
				}
			})
		}
	}
}

// quantTestWidths are the row widths a type is tested at: one block, odd
// counts of blocks, and a wide row.
func quantTestWidths(typ gguf.Type) []int {
	if typ.BlockSize() == 32 {
		return []int{32, 96, 288, 864, 4096}
	}
	return []int{256, 768, 2304, 4096}
}

// TestQuantSIMDKernelsMatchPortable checks each SIMD table's block-type
// kernels against the portable ones on the same blocks, through
// quantLinear's product (so a decode and a prefill batch), to rounding
// (the SIMD kernels sum the block terms in another order, fused).
func TestQuantSIMDKernelsMatchPortable(t *testing.T) {
	sets := kernelSets()
	if len(sets) == 1 {
		t.Skip("no SIMD kernel table on this CPU")
	}
	rng := rand.New(rand.NewPCG(20, 4))
	for _, kern := range sets[1:] {
		for qt := range numQuantTypes {
			typ := quantTypes[qt].gguf
			t.Run(kern.name+"/"+typ.String(), func(t *testing.T) {
				for _, k := range quantTestWidths(typ) {
					const rows = 21
					l, err := newQuantLinear(quantTestRows(t, rng, typ, rows, k), typ, rows, k)
					must(t, err)
					x := quantTestActs(kern, rng, 5, k).f
					a, p := &acts{kern: kern}, &acts{kern: sets[0]}
					for _, n := range []int{1, 5} {
						a.reset(n, k)
						p.reset(n, k)
						copy(a.f, x)
						copy(p.f, x)
						a.prepare(l)
						p.prepare(l)
						got, want := make([]float32, n*rows), make([]float32, n*rows)
						l.mul(got, rows, a, 0, rows)
						l.mul(want, rows, p, 0, rows)
						for i := range got {
							_, mag := quantDotReference(typ, l.form, l.raw[i%rows*l.rowBytes:(i%rows+1)*l.rowBytes], p.blockRow(l.form, i/rows))
							if math.Abs(float64(got[i]-want[i])) > 2e-5*mag+1e-30 {
								t.Fatalf("k %d, %d tokens, token %d row %d: %s %v, portable %v", k, n, i/rows, i%rows, kern.name, got[i], want[i])
							}
						}
					}
				}
			})
		}
	}
}

// TestQuantActivationForms checks the two activation quantizers: each
// value comes back within half a step, Q8_K's largest element is −127
// exactly, the sums are the codes' sums, and a zero block stays zero.
func TestQuantActivationForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 5))
	x := quantTestValues(rng, 1024)
	clear(x[256:512]) // a zero super-block
	for _, form := range []blockForm{formQ8_0, formQ8_K} {
		a := &acts{kern: newKernels(cpuFeatures{})}
		a.reset(1, len(x))
		copy(a.f, x)
		a.quantizeBlocks(form)
		r := a.blockRow(form, 0)
		bl, sl := form.blockLen(), form.sumLen()
		for i, v := range x {
			d := r.d[i/bl]
			if e := math.Abs(float64(v) - float64(r.q[i])*float64(d)); e > 0.5*math.Abs(float64(d))*1.01+1e-6 {
				t.Fatalf("form %d element %d: %v comes back as %d·%v", form, i, v, r.q[i], d)
			}
		}
		for j := range r.sum {
			var s int16
			for _, q := range r.q[j*sl : (j+1)*sl] {
				s += int16(q)
			}
			if s != r.sum[j] {
				t.Fatalf("form %d sum %d: %d, codes sum to %d", form, j, r.sum[j], s)
			}
		}
		if form == formQ8_K {
			for b := range r.d {
				if b == 1 {
					if r.d[b] != 0 {
						t.Errorf("zero block: d %v", r.d[b])
					}
					continue
				}
				var amax float32
				at := 0
				for i, v := range x[256*b : 256*b+256] {
					if abs32(v) > amax {
						amax, at = abs32(v), i
					}
				}
				if r.q[256*b+at] != -127 {
					t.Errorf("block %d: largest element coded %d, want −127", b, r.q[256*b+at])
				}
			}
		}
	}
}
