package cpu

import (
	"encoding/binary"

	"github.com/edgectl/edgectl/format/gguf"
)

// The portable row products of the GGUF block types, each on activations
// in the block form its type pairs with (quant_acts.go). Within a block
// every sum is exact integer arithmetic; each block then adds
// float32(Σ)·(d_w·d_x) (and the min term) to a float32 total, in block
// order. SIMD versions sum the same terms in another order (and fused),
// so they agree to rounding. The layouts are format/gguf's (dequant.go).

// quantType indexes the kernel table's block types.
type quantType uint8

const (
	typeQ8_0 quantType = iota
	typeQ4_0
	typeQ4_1
	typeQ5_0
	typeQ5_1
	typeIQ4NL
	typeQ2K
	typeQ3K
	typeQ4K
	typeQ5K
	typeQ6K
	numQuantTypes
)

// quantTypes maps each block type to its GGUF type, activation form and
// portable kernel.
var quantTypes = [numQuantTypes]struct {
	gguf gguf.Type
	form blockForm
	dot  func(w []byte, x q8Blocks) float32
}{
	typeQ8_0:  {gguf.TypeQ8_0, formQ8_0, dotQ8_0Go},
	typeQ4_0:  {gguf.TypeQ4_0, formQ8_0, dotQ4_0Go},
	typeQ4_1:  {gguf.TypeQ4_1, formQ8_0, dotQ4_1Go},
	typeQ5_0:  {gguf.TypeQ5_0, formQ8_0, dotQ5_0Go},
	typeQ5_1:  {gguf.TypeQ5_1, formQ8_0, dotQ5_1Go},
	typeIQ4NL: {gguf.TypeIQ4_NL, formQ8_0, dotIQ4NLGo},
	typeQ2K:   {gguf.TypeQ2_K, formQ8_K, dotQ2KGo},
	typeQ3K:   {gguf.TypeQ3_K, formQ8_K, dotQ3KGo},
	typeQ4K:   {gguf.TypeQ4_K, formQ8_K, dotQ4KGo},
	typeQ5K:   {gguf.TypeQ5_K, formQ8_K, dotQ5KGo},
	typeQ6K:   {gguf.TypeQ6_K, formQ8_K, dotQ6KGo},
}

// quantTypeOf is t's kernel-table index, if the engine multiplies t.
func quantTypeOf(t gguf.Type) (quantType, bool) {
	for i, q := range quantTypes {
		if q.gguf == t {
			return quantType(i), true
		}
	}
	return 0, false
}

// quantKernels are one block type's kernels: rows writes the products of
// len(out) consecutive weight rows (w, all the same length) with one
// activation row in the type's form (len(x.q) = a row's elements):
// out[i] = Σ_blocks weights·activations. One call covers a lane's rows
// in decode, a tile of them per token in prefill.
//
// rowsN, optional (nil where a set has none: prefill then calls rows
// once per token), is rows for a group of `tokens` activation rows at
// once, the prefill kernel: x holds the group's rows back to back
// (len(x.q) = tokens·K, x.d and x.sum likewise: acts' block form of
// consecutive tokens, tileActs), and out[t·ldo + i] receives weight row i
// times activation row t, for nrows = len(out) − (tokens−1)·ldo rows.
// It unpacks each weight block once into registers and multiplies it
// with every token of the group, so a token costs its integer dot
// products alone; it agrees with rows to rounding (its own summation
// order). quantLinear.mul runs a leftover of fewer than half a group on
// rows, a larger one as a group that overlaps the last whole one (its
// outputs for the overlapped tokens are written again).
type quantKernels struct {
	rows   func(w []byte, x q8Blocks, out []float32)
	rowsN  func(w []byte, x q8Blocks, out []float32, ldo int)
	tokens int
	// nibbles says rows reads the activations' codes in nibbleOrder too
	// (q8Blocks.qn; acts.prepare writes them).
	nibbles bool
}

// rowsOf makes a rows kernel of a one-row kernel.
func rowsOf(dot func(w []byte, x q8Blocks) float32) func([]byte, q8Blocks, []float32) {
	return func(w []byte, x q8Blocks, out []float32) {
		if len(out) == 0 {
			return
		}
		rb := len(w) / len(out)
		for i := range out {
			out[i] = dot(w[i*rb:(i+1)*rb], x)
		}
	}
}

// f16At reads the fp16 at b[0:2].
func f16At(b []byte) float32 { return f16Table[uint16(b[0])|uint16(b[1])<<8] }

// dot16 is Σ a·b over 16 int8s, unrolled: no bounds checks, and the
// products of one block are independent.
func dot16(a, b []int8) int32 {
	a, b = a[:16], b[:16]
	return int32(a[0])*int32(b[0]) + int32(a[1])*int32(b[1]) + int32(a[2])*int32(b[2]) + int32(a[3])*int32(b[3]) +
		int32(a[4])*int32(b[4]) + int32(a[5])*int32(b[5]) + int32(a[6])*int32(b[6]) + int32(a[7])*int32(b[7]) +
		int32(a[8])*int32(b[8]) + int32(a[9])*int32(b[9]) + int32(a[10])*int32(b[10]) + int32(a[11])*int32(b[11]) +
		int32(a[12])*int32(b[12]) + int32(a[13])*int32(b[13]) + int32(a[14])*int32(b[14]) + int32(a[15])*int32(b[15])
}

func dot32(a, b []int8) int32 { return dot16(a, b) + dot16(a[16:], b[16:]) }

// The 32-element types: each block's codes are unpacked to int8 (offsets
// applied) and multiplied with the block's activations.

// block_q8_0: d, qs[32].
func dotQ8_0Go(w []byte, x q8Blocks) float32 {
	var s float32
	for b, dx := range x.d {
		blk := w[34*b : 34*b+34]
		s += float32(dot32(unsafeInt8(blk[2:34]), x.q[32*b:])) * (f16At(blk) * dx)
	}
	return s
}

// nibbles unpacks 16 bytes of nibbles, low ones (elements 0…15) then
// high ones (16…31), eight at a time.
func nibbles(c *[32]byte, qs []byte) {
	a, b := le64(qs), le64(qs[8:])
	put64(c[0:], a&bytes0f)
	put64(c[8:], b&bytes0f)
	put64(c[16:], a>>4&bytes0f)
	put64(c[24:], b>>4&bytes0f)
}

// nibbles5 is nibbles with fifth bits from qh (bit i: element i).
func nibbles5(c *[32]byte, qs []byte, qh uint32) {
	nibbles(c, qs)
	for i := range c {
		c[i] |= byte(qh>>i&1) << 4
	}
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// Codes stay unsigned: Q4_0's n−8 and Q5_0's n−16 are Σn·q − 8Σq (16Σq).

// block_q4_0: d, qs[16]; (n−8)·d.
func dotQ4_0Go(w []byte, x q8Blocks) float32 {
	var s float32
	var c [32]byte
	for b, dx := range x.d {
		blk := w[18*b : 18*b+18]
		nibbles(&c, blk[2:])
		s += float32(dot32(unsafeInt8(c[:]), x.q[32*b:])-8*int32(x.sum[b])) * (f16At(blk) * dx)
	}
	return s
}

// block_q4_1: d, m, qs[16]; n·d + m: the min meets Σq.
func dotQ4_1Go(w []byte, x q8Blocks) float32 {
	var s float32
	var c [32]byte
	for b, dx := range x.d {
		blk := w[20*b : 20*b+20]
		nibbles(&c, blk[4:])
		s += float32(dot32(unsafeInt8(c[:]), x.q[32*b:]))*(f16At(blk)*dx) + float32(x.sum[b])*(f16At(blk[2:])*dx)
	}
	return s
}

// block_q5_0: d, qh, qs[16]; (n−16)·d.
func dotQ5_0Go(w []byte, x q8Blocks) float32 {
	var s float32
	var c [32]byte
	for b, dx := range x.d {
		blk := w[22*b : 22*b+22]
		nibbles5(&c, blk[6:], le32(blk[2:]))
		s += float32(dot32(unsafeInt8(c[:]), x.q[32*b:])-16*int32(x.sum[b])) * (f16At(blk) * dx)
	}
	return s
}

// block_q5_1: d, m, qh, qs[16]; n·d + m.
func dotQ5_1Go(w []byte, x q8Blocks) float32 {
	var s float32
	var c [32]byte
	for b, dx := range x.d {
		blk := w[24*b : 24*b+24]
		nibbles5(&c, blk[8:], le32(blk[4:]))
		s += float32(dot32(unsafeInt8(c[:]), x.q[32*b:]))*(f16At(blk)*dx) + float32(x.sum[b])*(f16At(blk[2:])*dx)
	}
	return s
}

// block_iq4_nl: d, qs[16] indexing the codebook.
func dotIQ4NLGo(w []byte, x q8Blocks) float32 {
	var s float32
	var c [32]int8
	for b, dx := range x.d {
		blk := w[18*b : 18*b+18]
		for j, v := range blk[2:18] {
			c[j], c[j+16] = gguf.IQ4NLValues[v&15], gguf.IQ4NLValues[v>>4]
		}
		s += float32(dot32(c[:], x.q[32*b:])) * (f16At(blk) * dx)
	}
	return s
}

// The K-quants: each super-block of 256 is unpacked into unsigned codes
// (eight at a time, as bytes of a uint64), a scale and a min per 16
// elements (the 32-element sub-blocks' twice), the codes' offset (Q3_K's
// 4, Q6_K's 32) and d and dmin; then
// Σ_g sc_g·(Σ code·q − off·Σq) · d·d_x − Σ_g m_g·Σq · dmin·d_x over the
// sixteen groups g, the integer sums exact.
type kBlock struct {
	c       [256]byte
	sc, mn  [16]int32
	off     int32
	d, dmin float32
}

// dotK is the K-quant product of type qt, bb bytes a super-block.
func dotK(w []byte, x q8Blocks, qt quantType, bb int) float32 {
	var s float32
	var k kBlock
	for b, dx := range x.d {
		blk := w[bb*b : bb*(b+1)]
		switch qt {
		case typeQ2K:
			unpackQ2K(blk, &k)
		case typeQ3K:
			unpackQ3K(blk, &k)
		case typeQ4K:
			unpackQ4K(blk, &k)
		case typeQ5K:
			unpackQ5K(blk, &k)
		case typeQ6K:
			unpackQ6K(blk, &k)
		}
		q, sum := x.q[256*b:256*b+256], x.sum[16*b:16*b+16]
		codes := unsafeInt8(k.c[:])
		var isum, msum int32
		for g := range 16 {
			isum += k.sc[g] * (dot16(codes[16*g:], q[16*g:]) - k.off*int32(sum[g]))
			msum += k.mn[g] * int32(sum[g])
		}
		s += float32(isum)*(k.d*dx) - float32(msum)*(k.dmin*dx)
	}
	return s
}

func dotQ2KGo(w []byte, x q8Blocks) float32 { return dotK(w, x, typeQ2K, 84) }
func dotQ3KGo(w []byte, x q8Blocks) float32 { return dotK(w, x, typeQ3K, 110) }
func dotQ4KGo(w []byte, x q8Blocks) float32 { return dotK(w, x, typeQ4K, 144) }
func dotQ5KGo(w []byte, x q8Blocks) float32 { return dotK(w, x, typeQ5K, 176) }
func dotQ6KGo(w []byte, x q8Blocks) float32 { return dotK(w, x, typeQ6K, 210) }

// Byte masks for the eight-at-a-time unpacking.
const (
	bytes01 = 0x0101010101010101
	bytes03 = 0x0303030303030303
	bytes0f = 0x0f0f0f0f0f0f0f0f
)

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func put64(b []byte, v uint64) { binary.LittleEndian.PutUint64(b, v) }

// unpack2bit writes Q2_K/Q3_K's 2-bit codes: element 128h + 32s + l at
// bits 2s of qs[32h + l].
func unpack2bit(c *[256]byte, qs []byte) {
	for h := range 2 {
		for i := 0; i < 32; i += 8 {
			v := le64(qs[32*h+i:])
			o := c[128*h+i:]
			put64(o, v&bytes03)
			put64(o[32:], v>>2&bytes03)
			put64(o[64:], v>>4&bytes03)
			put64(o[96:], v>>6&bytes03)
		}
	}
}

// block_q2_K: scales[16] (scale | min<<4), qs[64], d, dmin.
func unpackQ2K(blk []byte, k *kBlock) {
	blk = blk[:84]
	unpack2bit(&k.c, blk[16:80])
	for g, v := range blk[:16] {
		k.sc[g], k.mn[g] = int32(v&15), int32(v>>4)
	}
	k.off, k.d, k.dmin = 0, f16At(blk[80:]), f16At(blk[82:])
}

// block_q3_K: hmask[32], qs[64], scales[12], d. A code is its qs bits
// plus 4 where its hmask bit (bit i/32 of hmask[i%32]) is set, less 4.
func unpackQ3K(blk []byte, k *kBlock) {
	blk = blk[:110]
	unpack2bit(&k.c, blk[32:96])
	for i := 0; i < 32; i += 8 {
		m := le64(blk[i:])
		for s := range 8 {
			o := k.c[32*s+i:]
			put64(o, le64(o)|(m>>s&bytes01)<<2)
		}
	}
	for g, v := range gguf.Q3KScales(blk[96:108]) {
		k.sc[g] = int32(v)
	}
	k.mn = [16]int32{}
	k.off, k.d, k.dmin = 4, f16At(blk[108:]), 0
}

// q45KScales sets the eight 6-bit scales and mins of a Q4_K/Q5_K block,
// each for its two groups of 16.
func q45KScales(scales []byte, k *kBlock) {
	for j := range 8 {
		sc, m := gguf.Q4KScaleMin(scales, j)
		k.sc[2*j], k.sc[2*j+1] = int32(sc), int32(sc)
		k.mn[2*j], k.mn[2*j+1] = int32(m), int32(m)
	}
}

// block_q4_K: d, dmin, scales[12], qs[128]: chunk c's 32 bytes hold
// elements 64c + l (low nibbles) and 64c + 32 + l (high).
func unpackQ4K(blk []byte, k *kBlock) {
	blk = blk[:144]
	for c := range 4 {
		for i := 0; i < 32; i += 8 {
			v := le64(blk[16+32*c+i:])
			put64(k.c[64*c+i:], v&bytes0f)
			put64(k.c[64*c+32+i:], v>>4&bytes0f)
		}
	}
	q45KScales(blk[4:16], k)
	k.off, k.d, k.dmin = 0, f16At(blk), f16At(blk[2:])
}

// block_q5_K: Q4_K's layout with qh[32] after the scales: element i's
// fifth bit is bit i/32 of qh[i%32].
func unpackQ5K(blk []byte, k *kBlock) {
	blk = blk[:176]
	for c := range 4 {
		for i := 0; i < 32; i += 8 {
			v, h := le64(blk[48+32*c+i:]), le64(blk[16+i:])>>(2*c)
			put64(k.c[64*c+i:], v&bytes0f|(h&bytes01)<<4)
			put64(k.c[64*c+32+i:], v>>4&bytes0f|(h>>1&bytes01)<<4)
		}
	}
	q45KScales(blk[4:16], k)
	k.off, k.d, k.dmin = 0, f16At(blk), f16At(blk[2:])
}

// block_q6_K: ql[128], qh[64], scales[16] int8, d; codes less 32. In
// half h, ql[64h + l] holds elements 128h + l (low nibble) and
// 128h + 64 + l (high), ql[64h + 32 + l] elements +32 and +96; their top
// bits are bits 0, 2, 4, 6 of qh[32h + l].
func unpackQ6K(blk []byte, k *kBlock) {
	blk = blk[:210]
	for h := range 2 {
		for i := 0; i < 32; i += 8 {
			a, b, m := le64(blk[64*h+i:]), le64(blk[64*h+32+i:]), le64(blk[128+32*h+i:])
			o := k.c[128*h+i:]
			put64(o, a&bytes0f|(m&bytes03)<<4)
			put64(o[32:], b&bytes0f|(m>>2&bytes03)<<4)
			put64(o[64:], a>>4&bytes0f|(m>>4&bytes03)<<4)
			put64(o[96:], b>>4&bytes0f|(m>>6&bytes03)<<4)
		}
	}
	for g, v := range blk[192:208] {
		k.sc[g] = int32(int8(v))
	}
	k.mn = [16]int32{}
	k.off, k.d, k.dmin = 32, f16At(blk[208:]), 0
}
