package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/edgectl/edgectl/format/half"
)

// Quantizers for the block types Dequantize reads, so that edgectl can
// write test models in them and check its kernels round trip. The
// 32-element types follow ggml's reference rules (quantize_row_*_ref);
// the K-quants and IQ4_NL use simple rules of the same shape (each
// sub-block's range, then its scale quantized against the super-block's
// largest) without llama-quantize's error search: the same format, a
// little more error.

var blockQuant = map[Type]func(x []float32, b []byte){
	TypeQ8_0:   quantQ8_0,
	TypeQ4_0:   func(x []float32, b []byte) { quantSymmetric(x, b, 4) },
	TypeQ5_0:   func(x []float32, b []byte) { quantSymmetric(x, b, 5) },
	TypeQ4_1:   func(x []float32, b []byte) { quantMin(x, b, 4) },
	TypeQ5_1:   func(x []float32, b []byte) { quantMin(x, b, 5) },
	TypeIQ4_NL: quantIQ4NL,
	TypeQ2_K:   quantQ2K,
	TypeQ3_K:   quantQ3K,
	TypeQ4_K:   func(x []float32, b []byte) { quantQ45K(x, b, false) },
	TypeQ5_K:   func(x []float32, b []byte) { quantQ45K(x, b, true) },
	TypeQ6_K:   quantQ6K,
}

// Quantize encodes src as type t: len(src) must be a multiple of t's
// block size; the result is t.RowSize(len(src)) bytes.
func Quantize(t Type, src []float32) ([]byte, error) {
	f, ok := blockQuant[t]
	if !ok {
		return nil, fmt.Errorf("quantizing to %s is not supported (edgectl writes Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL and Q2_K…Q6_K blocks)", t)
	}
	bs, ts := int(t.BlockSize()), int(t.TypeSize())
	if len(src)%bs != 0 {
		return nil, fmt.Errorf("%d elements are not a multiple of the %s block size %d", len(src), t, bs)
	}
	out := make([]byte, len(src)/bs*ts)
	for i := 0; i < len(src)/bs; i++ {
		f(src[i*bs:(i+1)*bs], out[i*ts:(i+1)*ts])
	}
	return out, nil
}

func putF16(b []byte, v float32) { binary.LittleEndian.PutUint16(b, half.F32ToF16(v)) }

// nearest rounds half to even, as ggml's nearest_int does.
func nearest(v float32) int { return int(math.RoundToEven(float64(v))) }

// signedMax is the element of largest magnitude, with its sign (the first
// one on ties).
func signedMax(x []float32) float32 {
	var mx, amax float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	return mx
}

func minMax(x []float32) (lo, hi float32) {
	lo, hi = x[0], x[0]
	for _, v := range x[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func inv(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// quantQ8_0: d = max|x|/127, q = round(x/d) half away from zero.
func quantQ8_0(x []float32, b []byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	id := inv(d)
	putF16(b, d)
	for i, v := range x {
		b[2+i] = byte(int8(math.Round(float64(v * id))))
	}
}

// codes4 writes 32 codes of up to 5 bits as Q4_0/Q5_0 store them: low
// nibbles in qs[j] (element j) and qs[j]>>4 (element j+16), fifth bits in
// qh (bit i for element i) when qh is not nil.
func codes4(L *[32]uint8, qs, qh []byte) {
	var h uint32
	for j := range 16 {
		qs[j] = L[j]&15 | L[j+16]&15<<4
		h |= uint32(L[j]>>4) << j
		h |= uint32(L[j+16]>>4) << (j + 16)
	}
	if qh != nil {
		binary.LittleEndian.PutUint32(qh, h)
	}
}

// quantSymmetric is Q4_0 (bits 4) and Q5_0 (bits 5): the element of
// largest magnitude maps to code 0, d = max/−2^(bits−1), q = x/d + offset.
func quantSymmetric(x []float32, b []byte, bits int) {
	off := float32(int(1) << (bits - 1))
	top := 1<<bits - 1
	d := signedMax(x) / -off
	id := inv(d)
	putF16(b, d)
	var L [32]uint8
	for i, v := range x {
		L[i] = uint8(min(top, int(v*id+(off+0.5)))) // v·id ≥ −off: truncation is floor
	}
	if bits == 4 {
		codes4(&L, b[2:18], nil)
	} else {
		codes4(&L, b[6:22], b[2:6])
	}
}

// quantMin is Q4_1 and Q5_1: d = (max−min)/(2^bits − 1), m = min,
// q = (x−min)/d.
func quantMin(x []float32, b []byte, bits int) {
	lo, hi := minMax(x)
	top := 1<<bits - 1
	d := (hi - lo) / float32(top)
	id := inv(d)
	putF16(b, d)
	putF16(b[2:], lo)
	var L [32]uint8
	for i, v := range x {
		L[i] = uint8(min(top, int((v-lo)*id+0.5)))
	}
	if bits == 4 {
		codes4(&L, b[4:20], nil)
	} else {
		codes4(&L, b[8:24], b[4:8])
	}
}

// quantIQ4NL maps the element of largest magnitude to the codebook's −127,
// picks each element's nearest code, then refits d by least squares.
func quantIQ4NL(x []float32, b []byte) {
	d := signedMax(x) / float32(IQ4NLValues[0])
	id := inv(d)
	var L [32]uint8
	var sxv, svv float32
	for i, v := range x {
		best, err := 0, float32(math.Inf(1))
		for k, c := range IQ4NLValues {
			if e := float32(math.Abs(float64(v*id - float32(c)))); e < err {
				best, err = k, e
			}
		}
		L[i] = uint8(best)
		c := float32(IQ4NLValues[best])
		sxv += v * c
		svv += c * c
	}
	if svv > 0 && d != 0 {
		d = sxv / svv
	}
	putF16(b, d)
	codes4(&L, b[2:18], nil)
}

// superScales quantizes sub-block scales s (all ≥ 0) to levels 0…top of
// a super-block step max(s)/top, returning the levels and the fp16 step.
func superScales(s []float32, top int) ([]int, uint16) {
	var m float32
	for _, v := range s {
		m = max(m, v)
	}
	is := float32(0)
	if m > 0 {
		is = float32(top) / m
	}
	out := make([]int, len(s))
	for i, v := range s {
		out[i] = min(top, nearest(is*v))
	}
	return out, half.F32ToF16(m / float32(top))
}

// put2bit packs 256 two-bit codes as Q2_K and Q3_K store them: element
// 128h + 32s + l at bits 2s of qs[32h + l].
func put2bit(L *[256]uint8, qs []byte) {
	clear(qs[:64])
	for i, c := range L {
		qs[32*(i/128)+i%32] |= (c & 3) << (2 * (i % 128 / 32))
	}
}

// quantQ2K: per 16 elements x ≈ d·sc·q − dmin·m with q in 0…3 and m the
// negated minimum (≥ 0), sc and m quantized to 4 bits.
func quantQ2K(x []float32, b []byte) {
	var scale, mins [16]float32
	for j := range 16 {
		lo, hi := minMax(x[16*j : 16*j+16])
		lo = min(lo, 0)
		scale[j], mins[j] = (hi-lo)/3, -lo
	}
	PackQ2K(x, &scale, &mins, b)
}

// PackQ2K writes x (256 values) as one Q2_K block b (84 bytes) for the
// steps and mins (≥ 0) the caller chose per 16 elements, x ≈ step·q − min
// with q in 0…3: both quantized to 4-bit levels under fp16 super-scales,
// then each element's nearest code. quantQ2K chooses them as llama.cpp's
// reference quantizer does; the CPU engine's head fits them (head4_quant.go).
func PackQ2K(x []float32, scale, mins *[16]float32, b []byte) {
	ls, d := superScales(scale[:], 15)
	lm, dmin := superScales(mins[:], 15)
	binary.LittleEndian.PutUint16(b[80:], d)
	binary.LittleEndian.PutUint16(b[82:], dmin)
	var L [256]uint8
	for j := range 16 {
		b[j] = uint8(ls[j] | lm[j]<<4)
		dd := half.F16ToF32(d) * float32(ls[j])
		dm := half.F16ToF32(dmin) * float32(lm[j])
		for i := 16 * j; i < 16*j+16; i++ {
			if dd != 0 {
				L[i] = uint8(max(0, min(3, nearest((x[i]+dm)/dd))))
			}
		}
	}
	put2bit(&L, b[16:80])
}

// quantQ3K: per 16 elements x ≈ d·(sc−32)·q with q in −4…3 (the element
// of largest magnitude at −4), sc a 6-bit level.
func quantQ3K(x []float32, b []byte) {
	var scale [16]float32
	for j := range 16 {
		scale[j] = signedMax(x[16*j:16*j+16]) / -4
	}
	PackQ3K(x, &scale, b)
}

// PackQ3K writes x (256 values) as one Q3_K block b (110 bytes) for the
// signed steps the caller chose per 16 elements, x ≈ step·q with q in
// −4…3: the steps quantized to 6-bit levels under one fp16 scale (the
// largest step's magnitude at level −32), then each element's nearest
// code. quantQ3K chooses them as llama.cpp's reference quantizer does;
// the CPU engine's head fits them (head4_quant.go).
func PackQ3K(x []float32, scale *[16]float32, b []byte) {
	var maxScale float32
	for _, v := range scale {
		if math.Abs(float64(v)) > math.Abs(float64(maxScale)) {
			maxScale = v
		}
	}
	sb := b[96:108]
	clear(sb)
	is := float32(0)
	if maxScale != 0 {
		is = -32 / maxScale
	}
	for j := range 16 {
		l := max(-32, min(31, nearest(is*scale[j]))) + 32
		sb[j%8] |= uint8(l&15) << (4 * (j / 8))
		sb[8+j%4] |= uint8(l>>4) << (2 * (j / 4))
	}
	putF16(b[108:], inv(is))
	d := f16(b[108:])
	sc := Q3KScales(sb)
	var L [256]uint8
	hm := b[:32]
	clear(hm)
	for i, v := range x {
		q := 0
		if dd := d * float32(sc[i/16]); dd != 0 {
			q = max(-4, min(3, nearest(v/dd)))
		}
		if q >= 0 {
			hm[i%32] |= 1 << (i / 32)
		}
		L[i] = uint8(q & 3)
	}
	put2bit(&L, b[32:96])
}

// quantQ45K is Q4_K (five false) and Q5_K: per 32 elements
// x ≈ d·sc·q − dmin·m, q in 0…15 (0…31), sc and m 6-bit levels.
func quantQ45K(x []float32, b []byte, five bool) {
	top := 15
	if five {
		top = 31
	}
	var scale, mins [8]float32
	for j := range 8 {
		lo, hi := minMax(x[32*j : 32*j+32])
		lo = min(lo, 0)
		scale[j], mins[j] = (hi-lo)/float32(top), -lo
	}
	ls, d := superScales(scale[:], 63)
	lm, dmin := superScales(mins[:], 63)
	binary.LittleEndian.PutUint16(b, d)
	binary.LittleEndian.PutUint16(b[2:], dmin)
	s := b[4:16]
	clear(s)
	for j := range 8 {
		if j < 4 {
			s[j], s[j+4] = uint8(ls[j]), uint8(lm[j])
		} else {
			s[j+4] = uint8(ls[j]&15 | lm[j]&15<<4)
			s[j-4] |= uint8(ls[j]>>4) << 6
			s[j] |= uint8(lm[j]>>4) << 6
		}
	}
	qs, qh := b[16:144], []byte(nil)
	if five {
		qh, qs = b[16:48], b[48:176]
		clear(qh)
	}
	clear(qs)
	for i, v := range x {
		sc, m := Q4KScaleMin(s, i/32)
		q := 0
		if dd := half.F16ToF32(d) * float32(sc); dd != 0 {
			q = max(0, min(top, nearest((v+half.F16ToF32(dmin)*float32(m))/dd)))
		}
		qs[32*(i/64)+i%32] |= uint8(q&15) << (4 * (i % 64 / 32))
		if five {
			qh[i%32] |= uint8(q>>4) << (i / 32)
		}
	}
}

// quantQ6K: per 16 elements x ≈ d·sc·(q−32), q in 0…63 (the element of
// largest magnitude at 0), sc a signed byte.
func quantQ6K(x []float32, b []byte) {
	var scale [16]float32
	var maxScale float32
	for j := range 16 {
		scale[j] = signedMax(x[16*j:16*j+16]) / -32
		if math.Abs(float64(scale[j])) > math.Abs(float64(maxScale)) {
			maxScale = scale[j]
		}
	}
	is := float32(0)
	if maxScale != 0 {
		is = -128 / maxScale
	}
	for j := range 16 {
		b[192+j] = byte(int8(min(127, nearest(is*scale[j]))))
	}
	putF16(b[208:], inv(is))
	d := f16(b[208:])
	ql, qh := b[:128], b[128:192]
	clear(ql)
	clear(qh)
	for i, v := range x {
		q := 32
		if dd := d * float32(int8(b[192+i/16])); dd != 0 {
			q = max(-32, min(31, nearest(v/dd))) + 32
		}
		h, s, l := i/128, i%128/32, i%32
		ql[64*h+l+32*(s%2)] |= uint8(q&15) << (4 * (s / 2))
		qh[32*h+l] |= uint8(q>>4) << (2 * s)
	}
}
