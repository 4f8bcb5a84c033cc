// Package sherry packs ternary weights into Sherry 1.25-bit 3:4 codes, the
// .h1b v3 format of 1bit-systems (formats.md §7), using edgectl's projection
// (formats.md §8).
//
// Every group of 4 consecutive weights along K keeps 3 signs and one zero:
// code = zero_pos<<3 | signs, signs bit i (LSB first) belonging to the i-th
// surviving lane in ascending order, 1 = +1. Group g's 5-bit code sits at
// bit 5g of the row's little-endian bitstream, so 32 weights take 5 bytes.
package sherry

import (
	"fmt"
	"math"
)

// GroupSize is the number of weights that share one 5-bit code.
const GroupSize = 4

// RowAlign is the row-length multiple the packing needs (8 codes = 5 bytes).
const RowAlign = 32

// RowBytes is the packed size of a row of k weights (k a multiple of 32).
func RowBytes(k int) int { return k * 5 / 32 }

// EncodeGroup projects 4 weights to a code. The zero lane is the one with
// the smallest |w| (lowest index on ties); the other lanes keep their sign,
// a zero value (+0 or −0) counting as +1. On ternary input this is the
// lowest-index natural zero, or lane 0 when the group has none, with extra
// zeros becoming +1 — never −1, the bug that gave perplexity 1.28e9.
func EncodeGroup(w [4]float32) uint8 {
	zp := 0
	best := math.Abs(float64(w[0]))
	for p := 1; p < 4; p++ {
		if a := math.Abs(float64(w[p])); a < best {
			zp, best = p, a
		}
	}
	var signs uint8
	k := 0
	for p := 0; p < 4; p++ {
		if p == zp {
			continue
		}
		if w[p] >= 0 { // true for −0.0 as well
			signs |= 1 << k
		}
		k++
	}
	return uint8(zp<<3) | signs
}

// DecodeGroup expands a 5-bit code into 4 ternary weights.
func DecodeGroup(c uint8) [4]int8 {
	var w [4]int8
	zp, s, k := int(c>>3)&3, c&7, 0
	for p := 0; p < 4; p++ {
		if p == zp {
			continue
		}
		if (s>>k)&1 == 1 {
			w[p] = 1
		} else {
			w[p] = -1
		}
		k++
	}
	return w
}

// PackRow projects and packs one row of weights into dst
// (RowBytes(len(w)) bytes). The row length must be a multiple of 32.
func PackRow(dst []byte, w []float32) error {
	if len(w)%RowAlign != 0 {
		return fmt.Errorf("row length %d is not a multiple of %d (Sherry packs 32 weights into 5 bytes)", len(w), RowAlign)
	}
	if len(dst) != RowBytes(len(w)) {
		return fmt.Errorf("sherry: destination is %d bytes, want %d", len(dst), RowBytes(len(w)))
	}
	clear(dst)
	for g := 0; g < len(w)/4; g++ {
		c := EncodeGroup([4]float32(w[4*g : 4*g+4]))
		bit := 5 * g
		dst[bit>>3] |= byte(c << (bit & 7))
		if bit&7 > 3 {
			dst[bit>>3+1] |= c >> (8 - bit&7)
		}
	}
	return nil
}

// UnpackRow decodes len(dst) ternary weights (a multiple of 4) from src.
func UnpackRow(dst []int8, src []byte) {
	for g := 0; g < len(dst)/4; g++ {
		bit := 5 * g
		v := uint16(src[bit>>3])
		if bit>>3+1 < len(src) {
			v |= uint16(src[bit>>3+1]) << 8
		}
		w := DecodeGroup(uint8(v>>(bit&7)) & 31)
		copy(dst[4*g:], w[:])
	}
}

// ternaryTable maps a group's four codes, as the base-3 number
// Σ (q[p]+1)·3^p, to its 5-bit Sherry code and the number of weights the
// 3:4 projection changes (zeros after the first become +1; with no zero,
// lane 0 is dropped). It is built with EncodeGroup, so both paths agree by
// construction.
var ternaryTable = func() (t [81]struct{ code, changed uint8 }) {
	for i := range t {
		var w [4]float32
		var q [4]int8
		for p, v := 0, i; p < 4; p, v = p+1, v/3 {
			q[p] = int8(v%3) - 1
			w[p] = float32(q[p])
		}
		c := EncodeGroup(w)
		back := DecodeGroup(c)
		for p := range q {
			if back[p] != q[p] {
				t[i].changed++
			}
		}
		t[i].code = c
	}
	return t
}()

// PackTernaryRow packs a row of ternary codes (each exactly −1, 0 or +1;
// anything else panics) — the same bytes
// PackRow gives for those values as floats, via a table instead of the
// float comparisons — and returns how many weights the 3:4 projection
// changed.
func PackTernaryRow(dst []byte, q []int8) (changed int, err error) {
	if len(q)%RowAlign != 0 {
		return 0, fmt.Errorf("row length %d is not a multiple of %d (Sherry packs 32 weights into 5 bytes)", len(q), RowAlign)
	}
	if len(dst) != RowBytes(len(q)) {
		return 0, fmt.Errorf("sherry: destination is %d bytes, want %d", len(dst), RowBytes(len(q)))
	}
	for b := 0; b < len(q)/32; b++ {
		w := q[32*b : 32*b+32 : 32*b+32]
		var word uint64 // 8 codes, code s at bits 5s
		for s := 0; s < 8; s++ {
			g := w[4*s : 4*s+4 : 4*s+4]
			e := ternaryTable[int(g[0]+1)+3*int(g[1]+1)+9*int(g[2]+1)+27*int(g[3]+1)]
			word |= uint64(e.code) << (5 * s)
			changed += int(e.changed)
		}
		o := dst[5*b : 5*b+5 : 5*b+5]
		o[0], o[1], o[2], o[3], o[4] = byte(word), byte(word>>8), byte(word>>16), byte(word>>24), byte(word>>32)
	}
	return changed, nil
}
