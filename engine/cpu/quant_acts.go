package cpu

import (
	"math"

	"github.com/edgectl/edgectl/format/half"
)

// The GGUF block types multiply int8 activations in blocks, as llama.cpp
// does (docs/engine.md, "Quantized GGUF"): each activation row is
// quantized once per product input into the form its weights' type pairs
// with, and every block's integer sum is scaled by the weight block's and
// the activation block's scales.
//
//   - Q8_0 form (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL): blocks of 32,
//     d = max|x|/127 rounded to fp16 (block_q8_0's d), q = x·127/max|x|
//     rounded half to even; sum holds Σq per block (Q4_1/Q5_1's min term,
//     Q4_0/Q5_0's offset).
//   - Q8_K form (the K-quants): blocks of 256, the element of largest
//     magnitude at −127 (d = max/−127), q = min(127, round-half-even(x/d));
//     sum holds Σq per 16 (the K-quants' min and offset terms).
type blockForm uint8

const (
	formQ8_0 blockForm = iota
	formQ8_K
	numBlockForms
)

// blockLen is the elements per activation block, sumLen per sum.
func (f blockForm) blockLen() int { return [...]int{32, 256}[f] }
func (f blockForm) sumLen() int   { return [...]int{32, 16}[f] }

// blockActs is one block form of an acts batch: n rows of k codes, k /
// blockLen scales and k / sumLen sums each.
type blockActs struct {
	q    []int8
	qn   []int8 // q in nibbleOrder (formQ8_K, for the kernels that read it)
	d    []float32
	sum  []int16
	ok   bool
	qnOK bool // qn is q's
}

// q8Blocks is one activation row in a block form, as the kernels read it.
type q8Blocks struct {
	q   []int8
	qn  []int8 // q in nibbleOrder, for the kernels that read it (nil otherwise)
	d   []float32
	sum []int16
}

// quantizeBlocks computes form f of every row (once per batch).
func (a *acts) quantizeBlocks(f blockForm) {
	b := &a.blocks[f]
	if b.ok {
		return
	}
	b.ok, b.qnOK = true, false
	nb, ns := a.k/f.blockLen(), a.k/f.sumLen()
	b.q = grow(b.q, a.n*a.k)
	b.d = grow(b.d, a.n*nb)
	b.sum = grow(b.sum, a.n*ns)
	quant := quantQ8_0Go
	if f == formQ8_K {
		quant = quantQ8KGo
	}
	for t := range a.n {
		quant(a.f[t*a.k:(t+1)*a.k], b.q[t*a.k:(t+1)*a.k], b.d[t*nb:(t+1)*nb], b.sum[t*ns:(t+1)*ns])
	}
}

// nibbles writes the Q8_K form's codes in nibbleOrder too (after
// quantizeBlocks), once per batch, for the kernels that read them.
func (a *acts) nibbles() {
	b := &a.blocks[formQ8_K]
	if b.qnOK {
		return
	}
	b.qnOK = true
	b.qn = grow(b.qn, a.n*a.k)
	nibbleOrder(b.qn, b.q[:a.n*a.k])
}

// nibbleOrder writes q with the middle two quarters of every 128 codes
// swapped (0–31, 64–95, 32–63, 96–127): the order in which 64 bytes of a
// Q4_K super-block's qs hold their codes, low nibbles then high (qs byte
// l of chunk c holds elements 64c+l and 64c+32+l), so a 64-byte load of
// codes meets a 64-byte load of activations without shuffling either.
// len(q) is a multiple of 256 (Q8_K's block).
func nibbleOrder(dst, q []int8) {
	for i := 0; i+128 <= len(q); i += 128 {
		s, d := q[i:i+128], dst[i:i+128]
		copy(d[:32], s[:32])
		copy(d[32:64], s[64:96])
		copy(d[64:96], s[32:64])
		copy(d[96:], s[96:])
	}
}

// blockRow is row t of form f (quantizeBlocks must have run).
func (a *acts) blockRow(f blockForm, t int) q8Blocks {
	b := &a.blocks[f]
	nb, ns := a.k/f.blockLen(), a.k/f.sumLen()
	x := q8Blocks{q: b.q[t*a.k : (t+1)*a.k], d: b.d[t*nb : (t+1)*nb], sum: b.sum[t*ns : (t+1)*ns]}
	if b.qnOK {
		x.qn = b.qn[t*a.k : (t+1)*a.k]
	}
	return x
}

// quantQ8_0Go writes x's Q8_0 form: per 32, d = fp16(max|x|/127) and
// q = round-half-even(x·127/max|x|) (llama.cpp's quantize_row_q8_0 on
// x86: the multiplier is not 1/d, d is rounded to fp16 after).
func quantQ8_0Go(x []float32, q []int8, d []float32, sum []int16) {
	for b := range d {
		xs, qs := x[32*b:32*b+32], q[32*b:32*b+32]
		var amax float32
		for _, v := range xs {
			amax = max(amax, abs32(v))
		}
		id := float32(0)
		if amax != 0 {
			id = 127 / amax
		}
		d[b] = half.F16ToF32(half.F32ToF16(amax / 127))
		var s int32
		for i, v := range xs {
			c := int32(math.RoundToEven(float64(v * id)))
			qs[i] = int8(c)
			s += c
		}
		sum[b] = int16(s)
	}
}

// quantQ8KGo writes x's Q8_K form (ggml's quantize_row_q8_K_ref): per
// 256, the element of largest magnitude (the first on ties) maps to −127.
func quantQ8KGo(x []float32, q []int8, d []float32, sum []int16) {
	for b := range d {
		xs, qs := x[256*b:256*b+256], q[256*b:256*b+256]
		var amax, mx float32
		for _, v := range xs {
			if a := abs32(v); a > amax {
				amax, mx = a, v
			}
		}
		if amax == 0 {
			d[b] = 0
			clear(qs)
			clear(sum[16*b : 16*b+16])
			continue
		}
		is := -127 / mx
		for i, v := range xs {
			qs[i] = int8(min(127, int32(math.RoundToEven(float64(is*v)))))
		}
		for j := range 16 {
			var s int32
			for _, c := range qs[16*j : 16*j+16] {
				s += int32(c)
			}
			sum[16*b+j] = int16(s)
		}
		d[b] = 1 / is
	}
}
