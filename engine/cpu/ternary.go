package cpu

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"github.com/edgectl/edgectl/format/half"
)

// ternLinear is a ternary matrix kept in its packed form. Every product
// runs on int8 activations: per row an exact integer sum Σ w·q (per
// 256-block for the block-scaled GGUF types), then one float multiply by
// the weight scale and the activation scale. Nothing is expanded to floats.
type ternLinear struct {
	kind     string   // TQ2_0, TQ1_0, sherry, halo2, tq1h, I2, I2x4, B3, sherryT
	typ      ternType // kind as the kernel table indexes it
	data     []byte   // rows × rowBytes, usually an mmapped view
	rowBytes int
	r, c     int
	// rowScale multiplies row r's integer dot (.h1b per-row scales); nil for
	// the GGUF types, whose fp16 scale sits in each 256-weight block.
	rowScale []float32
	owned    bool   // data is already in anonymous memory (not a file view)
	from     string // the file's packing when repacked at load
}

func (l *ternLinear) rows() int   { return l.r }
func (l *ternLinear) cols() int   { return l.c }
func (l *ternLinear) int8() bool  { return true }
func (l *ternLinear) size() int64 { return int64(len(l.data)) + 4*int64(len(l.rowScale)) }
func (l *ternLinear) format() string {
	if l.from != "" {
		return l.from
	}
	return l.kind
}

// mul runs the kernels of l's type in a's table.
func (l *ternLinear) mul(out []float32, ldo int, a *acts, r0, r1 int) {
	k, nb := a.k, (a.k+255)/256
	tk := &a.kern.tern[l.typ]
	switch {
	case l.kind == "B3":
		l.mulB3(out, ldo, a, r0, r1) // base3.go
		return
	case l.kind == "sherryT":
		l.mulSherryLUT(out, ldo, a, r0, r1) // sherry_lut.go
		return
	case l.kind == "sherry" && tk.rows != nil:
		l.mulSherry(out, ldo, a, r0, r1) // sherry_kernels.go
		return
	case l.kind == "I2" && tk.dot4 != nil && a.n >= 4,
		l.kind == "I2x4" && a.n >= 4:
		l.mulI2x4(out, ldo, a, r0, r1)
		return
	case l.kind == "I2" && tk.rows != nil && l.rowScale != nil,
		l.kind == "I2x4" && l.rowScale != nil && r0%4 == 0 && r1%4 == 0:
		l.mulI2Rows(out, ldo, a, r0, r1)
		return
	}
	aq := a.q
	if l.kind == "I2" || l.kind == "I2x4" {
		aq = a.i2q()
	}
	for r := r0; r < r1; r++ {
		row := l.row(r)
		for t := range a.n {
			q := aq[t*k : (t+1)*k]
			var v float32
			if tk.blockDot != nil {
				v = tk.blockDot(row, q, a.bsum[t*nb:(t+1)*nb])
			} else {
				v = float32(tk.dot(row, q, a.total[t])) * l.rowScale[r]
			}
			out[t*ldo+r] = v * a.scale[t]
		}
	}
}

// TQ2_0: 256-weight blocks of qs[64] then fp16 d. Byte qs[32j+m] holds, at
// bits 2n, the code (w+1) of weight 128j + 32n + m.
const tq2Block = 66

func tq2DotGo(row []byte, q []int8, bsum []int32) float32 {
	var acc float32
	for b := range bsum {
		blk := row[b*tq2Block : (b+1)*tq2Block]
		x := q[b*256 : (b+1)*256]
		var s int32
		for j := range 2 {
			qs := blk[32*j : 32*j+32]
			xs := x[128*j : 128*j+128]
			for m, c := range qs {
				s += int32(c&3)*int32(xs[m]) + int32(c>>2&3)*int32(xs[32+m]) +
					int32(c>>4&3)*int32(xs[64+m]) + int32(c>>6)*int32(xs[96+m])
			}
		}
		d := half.F16ToF32(binary.LittleEndian.Uint16(blk[64:]))
		acc += d * float32(s-bsum[b])
	}
	return acc
}

// tq2DotFromBlockSums builds a TQ2_0 blockDot from a SIMD kernel that writes the
// exact integer sum Σ code·q of each of nb blocks; the sums are combined
// with the block scales in the portable kernel's order, so the result is
// bit for bit tq2DotGo's.
func tq2DotFromBlockSums(blockSums func(row *byte, q *int8, nb int, out *int32)) func(row []byte, q []int8, bsum []int32) float32 {
	return func(row []byte, q []int8, bsum []int32) float32 {
		nb := len(bsum)
		if nb == 0 {
			return 0
		}
		var buf [64]int32
		sums := buf[:]
		if nb > len(buf) {
			sums = make([]int32, nb)
		}
		_ = row[nb*tq2Block-1]
		_ = q[nb*256-1]
		blockSums(unsafe.SliceData(row), unsafe.SliceData(q), nb, unsafe.SliceData(sums))
		var acc float32
		for b := range nb {
			d := f16Table[binary.LittleEndian.Uint16(row[b*tq2Block+64:])]
			acc += d * float32(sums[b]-bsum[b])
		}
		return acc
	}
}

// TQ1_0: 256-weight blocks of qs[48], qh[4], fp16 d. Five trits per byte in
// ggml's fixed-point form (the first weight is the most significant trit).
const tq1Block = 54

// tq1Trits[b] are the five codes (w+1) byte b holds, in weight order.
var tq1Trits = func() (t [256][5]int8) {
	pow3 := [5]uint16{1, 3, 9, 27, 81}
	for b := range 256 {
		for n := range 5 {
			t[b][n] = int8((uint16(uint8(uint16(b)*pow3[n])) * 3) >> 8)
		}
	}
	return
}()

func tq1Dot(row []byte, q []int8, bsum []int32) float32 {
	var acc float32
	for b := range bsum {
		blk := row[b*tq1Block : (b+1)*tq1Block]
		x := q[b*256 : (b+1)*256]
		var s int32
		for m := range 32 {
			t := &tq1Trits[blk[m]]
			s += int32(t[0])*int32(x[m]) + int32(t[1])*int32(x[32+m]) + int32(t[2])*int32(x[64+m]) +
				int32(t[3])*int32(x[96+m]) + int32(t[4])*int32(x[128+m])
		}
		for m := range 16 {
			t := &tq1Trits[blk[32+m]]
			s += int32(t[0])*int32(x[160+m]) + int32(t[1])*int32(x[176+m]) + int32(t[2])*int32(x[192+m]) +
				int32(t[3])*int32(x[208+m]) + int32(t[4])*int32(x[224+m])
		}
		for j := range 4 {
			t := &tq1Trits[blk[48+j]]
			s += int32(t[0])*int32(x[240+j]) + int32(t[1])*int32(x[244+j]) + int32(t[2])*int32(x[248+j]) +
				int32(t[3])*int32(x[252+j])
		}
		d := half.F16ToF32(binary.LittleEndian.Uint16(blk[52:]))
		acc += d * float32(s-bsum[b])
	}
	return acc
}

// halo2Weights[b] are the four weights of a HALO_V2 byte (LSB first; codes
// 0→−1, 1→0, 2→+1, 3→0).
var halo2Weights = func() (t [256][4]int8) {
	dec := [4]int8{-1, 0, 1, 0}
	for b := range 256 {
		for s := range 4 {
			t[b][s] = dec[b>>(2*s)&3]
		}
	}
	return
}()

func halo2Dot(row []byte, q []int8, _ int32) int32 {
	var s int32
	k := len(q)
	full := k / 4
	for i, b := range row[:full] {
		w := &halo2Weights[b]
		x := q[4*i : 4*i+4]
		s += int32(w[0])*int32(x[0]) + int32(w[1])*int32(x[1]) + int32(w[2])*int32(x[2]) + int32(w[3])*int32(x[3])
	}
	for i := 4 * full; i < k; i++ {
		s += int32(halo2Weights[row[full]][i-4*full]) * int32(q[i])
	}
	return s
}

// base3Weights[b] are the five weights of a .h1b v4 byte: plain base 3,
// least significant digit first, digit d → d−1; bytes ≥ 243 decode to 0.
var base3Weights = func() (t [256][5]int8) {
	for b := range 243 {
		v := b
		for n := range 5 {
			t[b][n] = int8(v%3) - 1
			v /= 3
		}
	}
	return
}()

func base3Dot(row []byte, q []int8, _ int32) int32 {
	var s int32
	k := len(q)
	full := k / 5
	for i, b := range row[:full] {
		w := &base3Weights[b]
		x := q[5*i : 5*i+5]
		s += int32(w[0])*int32(x[0]) + int32(w[1])*int32(x[1]) + int32(w[2])*int32(x[2]) +
			int32(w[3])*int32(x[3]) + int32(w[4])*int32(x[4])
	}
	for i := 5 * full; i < k; i++ {
		s += int32(base3Weights[row[full]][i-5*full]) * int32(q[i])
	}
	return s
}

// sherryWeights[c] are the four weights of a 5-bit Sherry code:
// zero lane c>>3, signs of the other lanes in bits 0..2 (1 = +1).
var sherryWeights = func() (t [32][4]int8) {
	for c := range 32 {
		zp, k := c>>3, 0
		for p := range 4 {
			if p == zp {
				continue
			}
			if c>>k&1 == 1 {
				t[c][p] = 1
			} else {
				t[c][p] = -1
			}
			k++
		}
	}
	return
}()

func sherryDot(row []byte, q []int8, _ int32) int32 {
	var s int32
	for g := 0; g+32 <= len(q); g += 32 {
		o := g / 32 * 5
		word := uint64(row[o]) | uint64(row[o+1])<<8 | uint64(row[o+2])<<16 | uint64(row[o+3])<<24 | uint64(row[o+4])<<32
		x := q[g : g+32]
		for c := range 8 {
			w := &sherryWeights[word>>(5*c)&31]
			xx := x[4*c : 4*c+4]
			s += int32(w[0])*int32(xx[0]) + int32(w[1])*int32(xx[1]) + int32(w[2])*int32(xx[2]) + int32(w[3])*int32(xx[3])
		}
	}
	return s
}

// ternType indexes the ternary packings in a kernel table (kernels.tern),
// in ternKinds order.
type ternType uint8

const (
	typeTQ2 ternType = iota
	typeTQ1
	typeHALO2
	typeTQ1H
	typeSherry
	typeI2
	typeI2x4
	typeB3
	typeSherryT
	numTernTypes
)

// ternKinds are the packings' names (ternLinear.kind), by ternType.
var ternKinds = [numTernTypes]string{"TQ2_0", "TQ1_0", "halo2", "tq1h", "sherry", "I2", "I2x4", "B3", "sherryT"}

// rowBytesFor is the packed size of one K-wide row.
func rowBytesFor(kind string, k int) int {
	switch kind {
	case "TQ2_0":
		return k / 256 * tq2Block
	case "TQ1_0":
		return k / 256 * tq1Block
	case "halo2":
		return (k + 3) / 4
	case "tq1h":
		return (k + 19) / 20 * 4
	case "sherry", "sherryT": // sherryT: a row's share of its block
		return k * 5 / 32
	case "I2", "I2x4":
		return k / 256 * i2Block
	case "B3":
		return (k + b3Chunk - 1) / b3Chunk * 64
	}
	return 0
}

// row is where row r starts, as its type's row kernels read it: for I2x4
// and B3 from its first block to the end of its group of four (its 64-byte
// blocks lie 4·64 bytes apart).
func (l *ternLinear) row(r int) []byte {
	if l.kind == "I2x4" || l.kind == "B3" {
		return l.data[i2x4Offset(r, l.rowBytes/i2Block) : (r/4+1)*4*l.rowBytes]
	}
	return l.data[r*l.rowBytes : (r+1)*l.rowBytes]
}

// newTernary wraps packed rows; scales is per-row for the .h1b kinds.
// kind is one of ternKinds (the loaders' and repack's own constants).
func newTernary(kind string, data []byte, rows, k int, scales []float32) *ternLinear {
	typ := ternType(slices.Index(ternKinds[:], kind))
	if typ >= numTernTypes {
		panic("cpu: newTernary: unknown ternary packing " + kind)
	}
	return &ternLinear{kind: kind, typ: typ, data: data, rowBytes: rowBytesFor(kind, k), r: rows, c: k, rowScale: scales}
}

// mulI2x4 is the prefill path of I2 and I2x4: four tokens per pass over
// a row, or over two rows (I2) or a group of four (I2x4) where a kernel
// for that is set.
func (l *ternLinear) mulI2x4(out []float32, ldo int, a *acts, r0, r1 int) {
	tk := &a.kern.tern[l.typ]
	switch {
	case l.kind == "I2" && tk.dot4x2 != nil:
		e := r0 + (r1-r0)&^1
		l.mulI2Tiles(out, ldo, a, r0, e)
		r0 = e
	case l.kind == "I2x4" && tk.dot4x4 != nil && (r0+3)&^3 < r1&^3:
		g0, g1 := (r0+3)&^3, r1&^3
		l.mulI2Each(out, ldo, a, r0, g0)
		l.mulI2Tiles(out, ldo, a, g0, g1)
		r0 = g1
	}
	l.mulI2Each(out, ldo, a, r0, r1)
}

// prefillTile is how many rows prefill takes through each group of four
// tokens before the next group: the group's activations (10 KiB at
// K = 2560) stay in L1 while they meet the tile's rows, which come from
// L2; row by row, every token group was reloaded from L2 for each row.
const prefillTile = 32

// mulI2Tiles is mulI2x4 over rows [r0, r1) with the kernels that take
// several rows and four tokens per call: two plain I2 rows (dot4x2; r1−r0
// even) or one I2x4 group (dot4x4; r0, r1 multiples of four).
func (l *ternLinear) mulI2Tiles(out []float32, ldo int, a *acts, r0, r1 int) {
	k, aq, rb := a.k, a.i2q(), l.rowBytes
	tk := &a.kern.tern[l.typ]
	unit := 2
	if l.kind == "I2x4" {
		unit = 4
	}
	var s [16]int32 // row u's sum for token t+j in s[4u+j]
	for r := r0; r < r1; r += prefillTile {
		te := min(r+prefillTile, r1)
		t := 0
		for ; t+4 <= a.n; t += 4 {
			for i := r; i < te; i += unit {
				if unit == 2 {
					tk.dot4x2(l.data[i*rb:(i+2)*rb], rb, aq[t*k:], k, a.total[t:t+4], (*[8]int32)(s[:8]))
				} else {
					tk.dot4x4(l.data[i*rb:(i+4)*rb], aq[t*k:], k, a.total[t:t+4], &s)
				}
				for u := range unit {
					sc := l.rowScale[i+u]
					for j := range 4 {
						out[(t+j)*ldo+i+u] = float32(s[4*u+j]) * sc * a.scale[t+j]
					}
				}
			}
		}
		for ; t < a.n; t++ {
			q := aq[t*k : (t+1)*k]
			for i := r; i < te; i++ {
				out[t*ldo+i] = float32(tk.dot(l.row(i), q, a.total[t])) * l.rowScale[i] * a.scale[t]
			}
		}
	}
}

// mulI2Each is mulI2x4 one row at a time.
func (l *ternLinear) mulI2Each(out []float32, ldo int, a *acts, r0, r1 int) {
	k := a.k
	aq := a.i2q()
	tk := &a.kern.tern[l.typ]
	dot, dot4 := tk.dot, tk.dot4
	var sums [4]int32
	for r := r0; r < r1; r++ {
		row := l.row(r)
		sc := l.rowScale[r]
		t := 0
		for ; t+4 <= a.n; t += 4 {
			dot4(row, aq[t*k:], k, a.total[t:t+4], &sums)
			for i := range 4 {
				out[(t+i)*ldo+r] = float32(sums[i]) * sc * a.scale[t+i]
			}
		}
		for ; t < a.n; t++ {
			out[t*ldo+r] = float32(dot(row, aq[t*k:(t+1)*k], a.total[t])) * sc * a.scale[t]
		}
	}
}

// mulI2Rows is the decode path of I2 and I2x4: batches of rows per kernel
// call (for I2x4, r0 and r1 are multiples of four: mul checks).
func (l *ternLinear) mulI2Rows(out []float32, ldo int, a *acts, r0, r1 int) {
	k := a.k
	aq := a.i2q()
	rows := a.kern.tern[l.typ].rows
	for t := range a.n {
		rows(l.data[r0*l.rowBytes:r1*l.rowBytes], aq[t*k:(t+1)*k], a.total[t], a.scale[t],
			l.rowScale[r0:r1], out[t*ldo+r0:t*ldo+r1])
	}
}
