package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/edgectl/edgectl/format/half"
)

// Dequantization of ggml's block types: the value each stored element
// stands for, as ggml's dequantize_row_* computes it (ggml-quants.c, LC in
// docs/formats.md). Blocks hold 32 elements (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, IQ4_NL) or 256 (the K-quants, super-blocks of 16 or 8
// sub-blocks); every scale is an fp16 or a small integer times one.
//
// The sign and min conventions differ per type, and are the ones a reader
// gets wrong:
//   - Q4_0, Q5_0: unsigned codes less an offset, (q−8)·d and (q−16)·d.
//   - Q4_1, Q5_1: q·d + m (the min is added).
//   - Q2_K, Q4_K, Q5_K: d·sc·q − dmin·m (the min is subtracted).
//   - Q3_K: d·(sc−32)·(q − 4 unless the hmask bit is set).
//   - Q6_K: d·sc·(q−32), sc a signed byte.
//   - IQ4_NL: d·IQ4NLValues[q], a fixed non-linear table.
//   - Q8_0: d·q, q a signed byte.
//
// Products are rounded to float32 before a min is added or subtracted
// (the explicit conversions keep Go from fusing them), in ggml's order:
// (d·sc)·q − dmin·m.

// IQ4NLValues is IQ4_NL's codebook: a 4-bit code q stands for
// IQ4NLValues[q]·d (ggml's kvalues_iq4nl).
var IQ4NLValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// blockDequant writes one block's elements (the type's block size) into y.
var blockDequant = map[Type]func(b []byte, y []float32){
	TypeF32:    func(b []byte, y []float32) { y[0] = math.Float32frombits(binary.LittleEndian.Uint32(b)) },
	TypeF16:    func(b []byte, y []float32) { y[0] = f16(b) },
	TypeBF16:   func(b []byte, y []float32) { y[0] = half.BF16ToF32(binary.LittleEndian.Uint16(b)) },
	TypeQ8_0:   dequantQ8_0,
	TypeQ4_0:   dequantQ4_0,
	TypeQ4_1:   dequantQ4_1,
	TypeQ5_0:   dequantQ5_0,
	TypeQ5_1:   dequantQ5_1,
	TypeIQ4_NL: dequantIQ4NL,
	TypeQ2_K:   dequantQ2K,
	TypeQ3_K:   dequantQ3K,
	TypeQ4_K:   dequantQ4K,
	TypeQ5_K:   dequantQ5K,
	TypeQ6_K:   dequantQ6K,
}

// Dequantizable reports whether Dequantize reads t: F32, F16, BF16 and
// the block types Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K…Q6_K.
func (t Type) Dequantizable() bool { _, ok := blockDequant[t]; return ok }

// Dequantize writes the len(dst) elements stored as type t in src into
// dst. len(dst) must be a multiple of t's block size and src exactly
// t.RowSize(len(dst)) bytes.
func Dequantize(t Type, src []byte, dst []float32) error {
	f, ok := blockDequant[t]
	if !ok {
		return fmt.Errorf("dequantizing %s is not supported (edgectl reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL and Q2_K…Q6_K)", t)
	}
	bs, ts := int(t.BlockSize()), int(t.TypeSize())
	if len(dst)%bs != 0 || len(src) != len(dst)/bs*ts {
		return fmt.Errorf("%d bytes of %s for %d elements (want a multiple of %d elements in %d-byte blocks: %d bytes)", len(src), t, len(dst), bs, ts, len(dst)/bs*ts)
	}
	for i := 0; i < len(dst)/bs; i++ {
		f(src[i*ts:(i+1)*ts], dst[i*bs:(i+1)*bs])
	}
	return nil
}

func f16(b []byte) float32 { return half.F16ToF32(binary.LittleEndian.Uint16(b)) }

// block_q8_0: d fp16, qs[32] int8.
func dequantQ8_0(b []byte, y []float32) {
	d := f16(b)
	for i, q := range b[2:34] {
		y[i] = float32(int8(q)) * d
	}
}

// block_q4_0: d fp16, qs[16]: element j in the low nibble of qs[j],
// element j+16 in its high nibble.
func dequantQ4_0(b []byte, y []float32) {
	d := f16(b)
	for j, q := range b[2:18] {
		y[j] = float32(int(q&15)-8) * d
		y[j+16] = float32(int(q>>4)-8) * d
	}
}

// block_q4_1: d fp16, m fp16, qs[16] (Q4_0's nibble order).
func dequantQ4_1(b []byte, y []float32) {
	d, m := f16(b), f16(b[2:])
	for j, q := range b[4:20] {
		y[j] = float32(float32(q&15)*d) + m
		y[j+16] = float32(float32(q>>4)*d) + m
	}
}

// block_q5_0: d fp16, qh u32 (bit j: element j's fifth bit), qs[16].
func dequantQ5_0(b []byte, y []float32) {
	d := f16(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	for j, q := range b[6:22] {
		y[j] = float32(int(q&15|byte(qh>>j&1)<<4)-16) * d
		y[j+16] = float32(int(q>>4|byte(qh>>(j+16)&1)<<4)-16) * d
	}
}

// block_q5_1: d fp16, m fp16, qh u32, qs[16].
func dequantQ5_1(b []byte, y []float32) {
	d, m := f16(b), f16(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	for j, q := range b[8:24] {
		y[j] = float32(float32(q&15|byte(qh>>j&1)<<4)*d) + m
		y[j+16] = float32(float32(q>>4|byte(qh>>(j+16)&1)<<4)*d) + m
	}
}

// block_iq4_nl: d fp16, qs[16] (Q4_0's nibble order) indexing IQ4NLValues.
func dequantIQ4NL(b []byte, y []float32) {
	d := f16(b)
	for j, q := range b[2:18] {
		y[j] = float32(IQ4NLValues[q&15]) * d
		y[j+16] = float32(IQ4NLValues[q>>4]) * d
	}
}

// K-quant super-blocks hold 256 elements. Their 2-bit (Q2_K, Q3_K) and
// 6-bit (Q6_K) codes are laid out in two halves of 128: in half h, byte l
// (0…31) of the half's 32 code bytes holds elements 128h + 32s + l at bits
// 2s (s = 0…3). Q4_K/Q5_K's nibbles: in chunk c (0…3) of 64, byte l of the
// chunk's 32 holds element 64c + l low and 64c + 32 + l high.

// block_q2_K: scales[16] (low nibble scale, high nibble min, per 16
// elements), qs[64], d fp16, dmin fp16.
func dequantQ2K(b []byte, y []float32) {
	sc, qs := b[:16], b[16:80]
	d, dmin := f16(b[80:]), f16(b[82:])
	for i := range 256 {
		h, s, l := i/128, i%128/32, i%32
		q := qs[32*h+l] >> (2 * s) & 3
		j := i / 16
		y[i] = float32(d*float32(sc[j]&15)*float32(q)) - float32(dmin*float32(sc[j]>>4))
	}
}

// Q3KScales unpacks block_q3_K's 12 scale bytes into its sixteen 6-bit
// scales less 32 (−32…31): scale j's low four bits are the low (j < 8) or
// high (j ≥ 8) nibble of byte j%8, its top two bits are bits 2·(j/4) of
// byte 8 + j%4.
func Q3KScales(s []byte) [16]int8 {
	var out [16]int8
	for j := range 16 {
		lo := s[j%8] >> (4 * (j / 8)) & 15
		hi := s[8+j%4] >> (2 * (j / 4)) & 3
		out[j] = int8(lo|hi<<4) - 32
	}
	return out
}

// block_q3_K: hmask[32], qs[64], scales[12], d fp16. An element's 3-bit
// code is its 2 qs bits, less 4 where its hmask bit (bit i/32 of byte
// i%32) is clear.
func dequantQ3K(b []byte, y []float32) {
	hm, qs := b[:32], b[32:96]
	sc := Q3KScales(b[96:108])
	d := f16(b[108:])
	for i := range 256 {
		h, s, l := i/128, i%128/32, i%32
		q := int(qs[32*h+l] >> (2 * s) & 3)
		if hm[l]>>(i/32)&1 == 0 {
			q -= 4
		}
		y[i] = d * float32(sc[i/16]) * float32(q)
	}
}

// Q4KScaleMin returns sub-block j's (0…7) 6-bit scale and min from the 12
// scale bytes of block_q4_K and block_q5_K (ggml's get_scale_min_k4):
// j < 4 keeps them in the low six bits of bytes j and j+4; j ≥ 4 has the
// low four bits in byte j+4's nibbles and the top two in bits 6–7 of
// bytes j−4 and j.
func Q4KScaleMin(s []byte, j int) (scale, min uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&15 | s[j-4]>>6<<4, s[j+4]>>4 | s[j]>>6<<4
}

// block_q4_K: d fp16, dmin fp16, scales[12], qs[128].
func dequantQ4K(b []byte, y []float32) {
	d, dmin := f16(b), f16(b[2:])
	qs := b[16:144]
	for i := range 256 {
		c, hi, l := i/64, i%64/32, i%32
		q := qs[32*c+l] >> (4 * hi) & 15
		sc, m := Q4KScaleMin(b[4:16], i/32)
		y[i] = float32(d*float32(sc)*float32(q)) - float32(dmin*float32(m))
	}
}

// block_q5_K: d fp16, dmin fp16, scales[12], qh[32], qs[128]; element i's
// fifth bit is bit i/32 of qh[i%32].
func dequantQ5K(b []byte, y []float32) {
	d, dmin := f16(b), f16(b[2:])
	qh, qs := b[16:48], b[48:176]
	for i := range 256 {
		c, hi, l := i/64, i%64/32, i%32
		q := qs[32*c+l]>>(4*hi)&15 | qh[l]>>(i/32)&1<<4
		sc, m := Q4KScaleMin(b[4:16], i/32)
		y[i] = float32(d*float32(sc)*float32(q)) - float32(dmin*float32(m))
	}
}

// block_q6_K: ql[128], qh[64], scales[16] int8, d fp16. In half h,
// element 128h + 32s + l takes its low four bits from ql[64h + l + 32·(s%2)]
// (low nibble for s < 2, high for s ≥ 2) and its top two from bits 2s of
// qh[32h + l].
func dequantQ6K(b []byte, y []float32) {
	ql, qh, sc := b[:128], b[128:192], b[192:208]
	d := f16(b[208:])
	for i := range 256 {
		h, s, l := i/128, i%128/32, i%32
		lo := ql[64*h+l+32*(s%2)] >> (4 * (s / 2)) & 15
		hi := qh[32*h+l] >> (2 * s) & 3
		q := int(lo|hi<<4) - 32
		y[i] = d * float32(int8(sc[i/16])) * float32(q)
	}
}
