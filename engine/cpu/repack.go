package cpu

import (
	"encoding/binary"
	"math"

	"github.com/edgectl/edgectl/format/half"
)

// The "I2" layout: TQ2_0's bit order (byte 32j+m of a 256-weight block
// holds weight 128j+32n+m at bits 2n, code = w+1) without the per-block
// scale — 64 bytes per 256 weights — and one f32 scale per row. It is the
// layout of the fastest SIMD kernel (one int32 accumulator per row), so at
// load every ternary matrix whose rows each carry a single scale is
// repacked into it: HALO_V2, base-3 and Sherry rows (per-row scales) and
// TQ1_0/TQ2_0 rows whose blocks all share one d (as BitNet's per-tensor α
// gives). Weights stay packed at 2 bits; none is expanded to a float.
// EDGECTL_NATIVE_PACKING=1 keeps every matrix in its file layout. (Every
// I2 matrix has row scales: repack makes one only from rows with one
// scale each.)
const i2Block = 64

// permuteI2 reorders each 256-activation block so that 64 contiguous bytes
// n·64 … n·64+63 hold activations 32n … 32n+31 then 128+32n … 128+32n+31:
// the weights one 64-byte I2 block yields when its codes are shifted by 2n.
func permuteI2(dst, src []int8) {
	for b := 0; b+256 <= len(src); b += 256 {
		for n := range 4 {
			copy(dst[b+64*n:b+64*n+32], src[b+32*n:b+32*n+32])
			copy(dst[b+64*n+32:b+64*n+64], src[b+128+32*n:b+128+32*n+32])
		}
	}
}

// The "I2x4" layout is I2 with each group of four rows interleaved block
// by block: row 0's block 0, row 1's block 0, …, row 3's block 0, row 0's
// block 1, … A kernel that multiplies four rows at once (sharing each
// activation load) then reads one sequential stream instead of four
// interleaved ones 4·64·nb bytes apart, which the hardware prefetchers
// follow far better: on the 2-core Zen 5 VM the chain of BitNet-2B decode
// products went from 0.69 to 0.79 of the plain read rate, and decode from
// ~48 to ~60 tok/s (docs/engine.md). Repack writes it, for matrices whose
// rows are a multiple of four, where the kernel table has its kernels
// (kernels.hasI2x4) and EDGECTL_I2_PLAIN is not set. Row r starts at byte
// (r/4)·4·nb·64 + (r%4)·64; its blocks lie 256 bytes apart.

// i2x4Offset is where row r's block 0 starts in an I2x4 matrix of nb
// blocks per row.
func i2x4Offset(r, nb int) int { return r/4*4*nb*i2Block + r%4*i2Block }

// interleaveI2 writes the plain I2 row (nb blocks) as row r of an I2x4
// matrix in dst.
func interleaveI2(dst []byte, r int, row []byte) {
	nb := len(row) / i2Block
	off := i2x4Offset(r, nb)
	for b := range nb {
		copy(dst[off+b*4*i2Block:off+b*4*i2Block+i2Block], row[b*i2Block:(b+1)*i2Block])
	}
}

// i2DotGo returns Σ (c−1)·q over an I2 row (total = Σq).
func i2DotGo(row []byte, q []int8, total int32) int32 {
	var s int32
	for b := 0; b < len(q)/256; b++ {
		blk := row[b*i2Block : (b+1)*i2Block]
		x := q[b*256 : (b+1)*256]
		for j := range 2 {
			qs := blk[32*j : 32*j+32]
			xs := x[128*j : 128*j+128]
			for m, c := range qs {
				s += int32(c&3)*int32(xs[m]) + int32(c>>2&3)*int32(xs[32+m]) +
					int32(c>>4&3)*int32(xs[64+m]) + int32(c>>6)*int32(xs[96+m])
			}
		}
	}
	return s - total
}

// decodeRow writes the ternary weights of one packed row into dst (len K).
func decodeRow(kind string, row []byte, dst []int8) {
	k := len(dst)
	switch kind {
	case "TQ2_0", "I2":
		bs := tq2Block
		if kind == "I2" {
			bs = i2Block
		}
		for b := 0; b < k/256; b++ {
			for j := range 2 {
				for m := range 32 {
					c := row[b*bs+32*j+m]
					for n := range 4 {
						dst[256*b+128*j+32*n+m] = int8(c>>(2*n)&3) - 1
					}
				}
			}
		}
	case "TQ1_0":
		for b := 0; b < k/256; b++ {
			blk, y := row[b*tq1Block:], dst[256*b:]
			for m := range 32 {
				for n := range 5 {
					y[32*n+m] = tq1Trits[blk[m]][n] - 1
				}
			}
			for m := range 16 {
				for n := range 5 {
					y[160+16*n+m] = tq1Trits[blk[32+m]][n] - 1
				}
			}
			for j := range 4 {
				for n := range 4 {
					y[240+4*n+j] = tq1Trits[blk[48+j]][n] - 1
				}
			}
		}
	case "halo2":
		for i := range k {
			dst[i] = halo2Weights[row[i/4]][i%4]
		}
	case "tq1h":
		for i := 0; i < k; i += 5 {
			copy(dst[i:min(i+5, k)], base3Weights[row[i/5]][:])
		}
	case "sherry":
		for g := 0; g < k/4; g++ {
			copy(dst[4*g:], sherryWeights[sherryCode(row, g)][:])
		}
	}
}

// encodeI2 packs ternary weights (K a multiple of 256) into dst.
func encodeI2(dst []byte, w []int8) {
	for b := 0; b < len(w)/256; b++ {
		for j := range 2 {
			x := w[256*b+128*j : 256*b+128*j+128]
			o := dst[b*i2Block+32*j : b*i2Block+32*j+32]
			for m := range o {
				o[m] = byte(x[m]+1) | byte(x[32+m]+1)<<2 | byte(x[64+m]+1)<<4 | byte(x[96+m]+1)<<6
			}
		}
	}
}

// parallelRows runs f over row ranges on all cores (load-time work).
func parallelRows(rows int, f func(lo, hi int)) {
	p := newPool(0)
	defer p.close()
	p.parallel(rows, 64, f)
}

// blockScales returns the fp16 d of each block of a TQ row.
func blockScales(kind string, row []byte, nb int) []float32 {
	bs, off := tq2Block, 64
	if kind == "TQ1_0" {
		bs, off = tq1Block, 52
	}
	d := make([]float32, nb)
	for b := range nb {
		d[b] = half.F16ToF32(binary.LittleEndian.Uint16(row[b*bs+off:]))
	}
	return d
}

// repackFor is the layout the load gives ternary matrix l for the kernel
// table k: base-3 matrices stay at their own 1.6 bits in B3 where k reads
// it (base3.go), Sherry at its 1.25 bits where k's Sherry kernels decode
// faster than I2x4 (kernels.sherryNative): in the lookup layout where k
// has its kernels (sherry_lut.go), else as stored; everything else goes
// through repack.
func repackFor(k *kernels, l *ternLinear, mem *arena, i2x4 bool) *ternLinear {
	if l.kind == "sherry" && k.sherryNative {
		if t := repackSherryLUT(k, l, mem); t != nil {
			return t
		}
		return l
	}
	if k.readsB3() {
		if b := repackB3(l, mem); b != nil {
			return b
		}
	}
	return repack(l, mem, i2x4)
}

// rowScales returns the one scale of each row of l: its own (.h1b), or
// the d that every block of a TQ row shares; nil where a row's blocks
// differ (K a multiple of 256).
func rowScales(l *ternLinear) []float32 {
	if l.rowScale != nil {
		return l.rowScale
	}
	nb := l.c / 256
	scales := make([]float32, l.r)
	for r := range l.r {
		d := blockScales(l.kind, l.data[r*l.rowBytes:(r+1)*l.rowBytes], nb)
		for _, v := range d {
			if v != d[0] {
				return nil
			}
		}
		scales[r] = d[0]
	}
	return scales
}

// repack returns l in the I2 layout when every row has one scale (else
// TQ1_0 becomes TQ2_0, exactly, for its SIMD kernel), or l itself. With
// i2x4 (the kernels exist and the settings allow it), a matrix whose rows
// are a multiple of four becomes I2x4 instead of I2.
func repack(l *ternLinear, mem *arena, i2x4 bool) *ternLinear {
	if l.c%256 != 0 {
		return l
	}
	nb := l.c / 256
	scales := rowScales(l)
	w := make([]int8, l.c)
	if scales == nil {
		if l.kind != "TQ1_0" {
			return l
		}
		// Per-block scales vary: same weights and d in TQ2_0's layout.
		data := mem.alloc(l.r * nb * tq2Block)
		for r := range l.r {
			row := l.data[r*l.rowBytes : (r+1)*l.rowBytes]
			decodeRow("TQ1_0", row, w)
			d := blockScales("TQ1_0", row, nb)
			out := data[r*nb*tq2Block:]
			for b := range nb {
				encodeI2(out[b*tq2Block:b*tq2Block+i2Block], w[256*b:256*(b+1)])
				binary.LittleEndian.PutUint16(out[b*tq2Block+64:], half.F32ToF16(d[b]))
			}
		}
		t := newTernary("TQ2_0", data, l.r, l.c, nil)
		t.owned, t.from = true, l.format()
		return t
	}
	data := mem.alloc(l.r * nb * i2Block)
	il := i2x4 && l.r%4 == 0
	parallelRows(l.r, func(lo, hi int) {
		w := make([]int8, l.c)
		tmp := make([]byte, nb*i2Block)
		for r := lo; r < hi; r++ {
			row, out := l.data[r*l.rowBytes:(r+1)*l.rowBytes], data[r*nb*i2Block:(r+1)*nb*i2Block]
			if il {
				out = tmp
			}
			if l.kind == "TQ2_0" { // same bit order: drop the scales
				for b := range nb {
					copy(out[b*i2Block:(b+1)*i2Block], row[b*tq2Block:])
				}
			} else {
				decodeRow(l.kind, row, w)
				encodeI2(out, w)
			}
			if il {
				interleaveI2(data, r, out)
			}
		}
	})
	kind := "I2"
	if il {
		kind = "I2x4"
	}
	t := newTernary(kind, data, l.r, l.c, scales)
	t.owned, t.from = true, l.format()
	return t
}

// q8Linear is a float matrix (the LM head) quantized per row to int8:
// w ≈ q·scale[r]. Half the bytes of F16, a quarter of F32, and an exact
// integer dot with the int8 activations.
type q8Linear struct {
	w     []int8
	scale []float32
	wsum  []int32 // Σ of the first c&^63 codes of each row (VNNI offset)
	r, c  int
}

func (l *q8Linear) rows() int      { return l.r }
func (l *q8Linear) cols() int      { return l.c }
func (l *q8Linear) int8() bool     { return true }
func (l *q8Linear) size() int64    { return int64(len(l.w)) + 4*int64(len(l.scale)) }
func (l *q8Linear) format() string { return "Q8" }

func (l *q8Linear) mul(out []float32, ldo int, a *acts, r0, r1 int) {
	k, q8 := l.c, &a.kern.q8
	if q8.unsigned && q8.rowsU != nil && a.quOK {
		l.mulRows(out, ldo, a, r0, r1)
		return
	}
	if !q8.unsigned && q8.rows != nil {
		l.mulRowsSigned(out, ldo, a, r0, r1)
		return
	}
	for r := r0; r < r1; r++ {
		w := l.w[r*k : (r+1)*k]
		for t := range a.n {
			var d int32
			if q8.unsigned && a.quOK {
				d = q8.dotU(w, a.qu[t*k:(t+1)*k], a.q[t*k:(t+1)*k], l.wsum[r])
			} else {
				d = q8.dot(w, a.q[t*k:(t+1)*k])
			}
			out[t*ldo+r] = float32(d) * l.scale[r] * a.scale[t]
		}
	}
}

// mulRows runs chunks of rows per kernel call for each token.
func (l *q8Linear) mulRows(out []float32, ldo int, a *acts, r0, r1 int) {
	k, k64 := l.c, l.c&^63
	rowsU := a.kern.q8.rowsU
	var sums [64]int32
	for t := range a.n {
		xu, x, xs := a.qu[t*k:(t+1)*k], a.q[t*k:(t+1)*k], a.scale[t]
		for r := r0; r < r1; r += len(sums) {
			n := min(len(sums), r1-r)
			rowsU(l.w[r*k:(r+n)*k], k, xu, sums[:n])
			o := out[t*ldo+r : t*ldo+r+n]
			for i := range o {
				d := sums[i] - 128*l.wsum[r+i]
				if k64 < k {
					d += q8DotGo(l.w[(r+i)*k+k64:(r+i+1)*k], x[k64:])
				}
				o[i] = float32(d) * l.scale[r+i] * xs
			}
		}
	}
}

// mulRowsSigned is mulRows for a signed rows kernel (no offset terms).
func (l *q8Linear) mulRowsSigned(out []float32, ldo int, a *acts, r0, r1 int) {
	k, rows := l.c, a.kern.q8.rows
	var sums [64]int32
	for t := range a.n {
		x, xs := a.q[t*k:(t+1)*k], a.scale[t]
		for r := r0; r < r1; r += len(sums) {
			n := min(len(sums), r1-r)
			rows(l.w[r*k:(r+n)*k], k, x, sums[:n])
			o := out[t*ldo+r : t*ldo+r+n]
			for i := range o {
				o[i] = float32(sums[i]) * l.scale[r+i] * xs
			}
		}
	}
}

func q8DotGo(w, x []int8) int32 {
	var s int32
	for i, v := range w {
		s += int32(v) * int32(x[i])
	}
	return s
}

// quantizeHead builds the int8 copy of a float head.
func quantizeHead(f *floatRows, mem *arena) *q8Linear {
	buf := mem.alloc(f.r * f.c)
	l := &q8Linear{r: f.r, c: f.c, scale: make([]float32, f.r), wsum: make([]int32, f.r)}
	l.w = unsafeInt8(buf)
	f.eachRowOnce(func(r int, row []float32) {
		m := float32(0)
		for _, v := range row {
			m = max(m, abs32(v))
		}
		if m == 0 {
			return
		}
		l.scale[r] = m / 127
		inv := 127 / m
		q := l.w[r*f.c : (r+1)*f.c]
		var sum int32
		for i, v := range row {
			q[i] = int8(math.Round(float64(v * inv)))
			if i < f.c&^63 {
				sum += int32(q[i])
			}
		}
		l.wsum[r] = sum
	})
	return l
}
