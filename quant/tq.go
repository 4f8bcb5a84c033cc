// Package quant holds edgectl's weight quantizers and packers: the
// llama.cpp TQ1_0/TQ2_0 row codecs, the .h1b HALO_V2 and base-3 ("TQ1")
// ternary packings, BitNet absmean ternarization, GPTQ int4, and the
// `quant pack` pipeline that streams a checkpoint through them.
//
// The row codecs are pure functions over one row so that other packages
// (engine/cpu) can test their kernels against them.
package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/edgectl/edgectl/format/half"
)

// QK is the TQ1_0/TQ2_0 block length (QK_K).
const QK = 256

// Block sizes in bytes.
const (
	BlockBytesTQ1_0 = 54 // qs[48] qh[4] d(f16)
	BlockBytesTQ2_0 = 66 // qs[64] d(f16)
)

// RowError is a fault in one row's values; Index is the element's position
// in the row. The pipeline adds the tensor name, shape and row.
type RowError struct {
	Index int
	Msg   string
}

func (e *RowError) Error() string { return fmt.Sprintf("element %d: %s", e.Index, e.Msg) }

// checkBlock returns the block's absmax, rejecting NaN/Inf and a maximum
// that fp16 cannot hold (it would become d = Inf and poison the block).
func checkBlock(x []float32, base int) (float32, error) {
	var amax float32
	for i, v := range x {
		a := abs32(v)
		if !(a <= math.MaxFloat32) { // NaN or ±Inf
			return 0, &RowError{base + i, fmt.Sprintf("value %v is not finite", v)}
		}
		if a > amax {
			amax = a
		}
	}
	if math.IsInf(float64(half.F16ToF32(half.F32ToF16(amax))), 0) {
		return 0, &RowError{base, fmt.Sprintf("block scale %g overflows fp16 (max 65504); these are not BitNet-range weights: use --ternarize auto or absmean, which rescale them", amax)}
	}
	return amax, nil
}

// trit is lroundf(v*id)+1 with the product rounded to float32 first, as
// the C reference computes it. |v| ≤ d makes |v·id| at most 1 plus a
// rounding ulp, where lroundf (half away from zero) is −1 for p ≤ −0.5,
// +1 for p ≥ 0.5 and 0 between; comparing is exact and much cheaper than
// a rounding call.
func trit(v, id float32) int {
	p := v * id
	t := 1
	if p >= 0.5 {
		t = 2
	}
	if p <= -0.5 {
		t = 0
	}
	return t
}

// trits fills t with trit(x[i], id) for one block.
func trits(t *[QK]uint8, x []float32, id float32) {
	x = x[:QK]
	for i, v := range x {
		t[i] = uint8(trit(v, id))
	}
}

func rowLen(x []float32, dst []byte, blockBytes int) error {
	if len(x)%QK != 0 {
		return &RowError{len(x) - len(x)%QK, fmt.Sprintf("row length %d is not a multiple of %d", len(x), QK)}
	}
	if len(dst) != len(x)/QK*blockBytes {
		return fmt.Errorf("quant: destination is %d bytes, want %d", len(dst), len(x)/QK*blockBytes)
	}
	return nil
}

// QuantizeRowTQ2_0 is llama.cpp's quantize_row_tq2_0_ref: dst receives
// len(x)/256 blocks of 66 bytes.
func QuantizeRowTQ2_0(dst []byte, x []float32) error {
	return quantizeRowTQ(dst, x, BlockBytesTQ2_0, packTQ2)
}

// quantizeRowTQ is the loop both reference quantizers share: per 256-weight
// block, d = max|x| (checked for NaN/Inf and fp16 overflow), trits of x·(1/d)
// in float32, the packer's layout, then d as fp16 in the block's last 2 bytes.
func quantizeRowTQ(dst []byte, x []float32, blockBytes int, pack func([]byte, *[QK]uint8)) error {
	if err := rowLen(x, dst, blockBytes); err != nil {
		return err
	}
	for b := 0; b < len(x)/QK; b++ {
		xb := x[b*QK : (b+1)*QK]
		y := dst[b*blockBytes : (b+1)*blockBytes]
		d, err := checkBlock(xb, b*QK)
		if err != nil {
			return err
		}
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var t [QK]uint8
		trits(&t, xb, id)
		pack(y, &t)
		binary.LittleEndian.PutUint16(y[blockBytes-2:], half.F32ToF16(d))
	}
	return nil
}

// DequantizeRowTQ2_0 is dequantize_row_tq2_0: len(dst) weights from
// len(dst)/256 blocks.
func DequantizeRowTQ2_0(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK; b++ {
		blk := src[b*BlockBytesTQ2_0:]
		d := half.F16ToF32(binary.LittleEndian.Uint16(blk[64:]))
		y := dst[b*QK:]
		for j := 0; j < 64; j += 32 {
			for l := 0; l < 4; l++ {
				for m := 0; m < 32; m++ {
					y[4*j+32*l+m] = float32(int((blk[j+m]>>(2*l))&3)-1) * d
				}
			}
		}
	}
}

// tq1Pack stores a base-3 number q of 5 trits as the fixed-point byte
// ceil(q·256/243), so the decoder can peel trits by multiplying.
func tq1Pack(q int) byte { return byte((q*256 + 242) / 243) }

// QuantizeRowTQ1_0 is llama.cpp's quantize_row_tq1_0_ref: dst receives
// len(x)/256 blocks of 54 bytes. The first element of a group is the most
// significant trit.
func QuantizeRowTQ1_0(dst []byte, x []float32) error {
	return quantizeRowTQ(dst, x, BlockBytesTQ1_0, packTQ1)
}

var pow3 = [5]uint8{1, 3, 9, 27, 81}

// tq1Trit extracts trit n of a fixed-point byte; the uint8 wrap of
// byte·3^n is intended (it drops the trits above n).
func tq1Trit(b byte, n int) int {
	return int((uint16(b*pow3[n])*3)>>8) - 1
}

// DequantizeRowTQ1_0 is dequantize_row_tq1_0.
func DequantizeRowTQ1_0(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK; b++ {
		blk := src[b*BlockBytesTQ1_0:]
		d := half.F16ToF32(binary.LittleEndian.Uint16(blk[52:]))
		y := dst[b*QK:]
		for n := 0; n < 5; n++ {
			for m := 0; m < 32; m++ {
				y[32*n+m] = float32(tq1Trit(blk[m], n)) * d
			}
			for m := 0; m < 16; m++ {
				y[160+16*n+m] = float32(tq1Trit(blk[32+m], n)) * d
			}
		}
		for n := 0; n < 4; n++ {
			for j := 0; j < 4; j++ {
				y[240+4*n+j] = float32(tq1Trit(blk[48+j], n)) * d
			}
		}
	}
}

// QuantizeTernaryRow packs ternary codes q (−1, 0, +1) with one scale s
// into TQ2_0 (typ 2) or TQ1_0 (typ 1) blocks. The bytes equal
// QuantizeRowTQ*_0 of the floats q[i]·s (d = s, or 0 for an all-zero block)
// without recomputing what the codes already say.
func QuantizeTernaryRow(dst []byte, q []int8, s float32, tq1 bool) error {
	bb := BlockBytesTQ2_0
	if tq1 {
		bb = BlockBytesTQ1_0
	}
	if len(q)%QK != 0 {
		return &RowError{len(q) - len(q)%QK, fmt.Sprintf("row length %d is not a multiple of %d", len(q), QK)}
	}
	if s < 0 || !(s <= math.MaxFloat32) {
		return fmt.Errorf("scale %v is not a finite non-negative number", s)
	}
	d16 := half.F32ToF16(s)
	if math.IsInf(float64(half.F16ToF32(d16)), 0) {
		return &RowError{0, fmt.Sprintf("scale %g overflows fp16 (max 65504)", s)}
	}
	var t [QK]uint8
	for b := 0; b < len(q)/QK; b++ {
		qb := q[b*QK : (b+1)*QK]
		nz := false
		for i, c := range qb {
			t[i] = uint8(c + 1)
			nz = nz || c != 0
		}
		y := dst[b*bb : (b+1)*bb]
		d := d16
		if !nz || s == 0 {
			d = 0
			for i := range t {
				t[i] = 1
			}
		}
		if tq1 {
			packTQ1(y, &t)
			binary.LittleEndian.PutUint16(y[52:], d)
		} else {
			packTQ2(y, &t)
			binary.LittleEndian.PutUint16(y[64:], d)
		}
	}
	return nil
}

// packTQ2 stores 256 trits (0..2) as TQ2_0's qs[64]: byte j+m holds
// weights 4j+m+32n at bits 2n.
func packTQ2(y []byte, t *[QK]uint8) {
	for j := 0; j < 64; j += 32 {
		tj := t[4*j : 4*j+128]
		for m := 0; m < 32; m++ {
			y[j+m] = tj[m] | tj[m+32]<<2 | tj[m+64]<<4 | tj[m+96]<<6
		}
	}
}

// packTQ1 stores 256 trits as TQ1_0's qs[48] and qh[4] (first element the
// most significant trit of each fixed-point byte).
func packTQ1(y []byte, t *[QK]uint8) {
	for m := 0; m < 32; m++ { // weights 0..159
		q := 0
		for n := 0; n < 5; n++ {
			q = q*3 + int(t[m+32*n])
		}
		y[m] = tq1Pack(q)
	}
	for m := 0; m < 16; m++ { // weights 160..239
		q := 0
		for n := 0; n < 5; n++ {
			q = q*3 + int(t[160+m+16*n])
		}
		y[32+m] = tq1Pack(q)
	}
	for j := 0; j < 4; j++ { // weights 240..255
		q := 0
		for m := 0; m < 4; m++ {
			q = q*3 + int(t[240+j+4*m])
		}
		y[48+j] = tq1Pack(q * 3)
	}
}
