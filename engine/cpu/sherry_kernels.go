package cpu

import (
	"sync"
	"unsafe"
)

// Sherry (.h1b v3) multiplied in its file layout. A row is 5-byte groups
// of 32 weights; group g's 40-bit little-endian word holds eight 5-bit
// codes, code i (bits 5i…5i+4) for weights 32g+4i … 32g+4i+3: its bits 3–4
// are the lane of the zero, bits 0–2 the signs of the other three lanes in
// order (sherryWeights). These kernels read the 1.25 bits a weight as
// stored. The load keeps Sherry as stored where the table's kernels
// decode faster than the 2-bit I2x4 repack (kernels.sherryNative: the
// AVX-512 VBMI set, 1.14× TQ2_0 on the 12-layer model, docs/engine.md
// "Sherry as stored"); elsewhere (AVX2, NEON, portable) it repacks to
// I2/I2x4 (repackFor), and EDGECTL_NATIVE_PACKING=1 keeps the rows as
// stored on every table, so that ternLinear.mul runs them here.
//
// The SIMD kernels all take the same route: pull each code into a byte of
// its own, look the byte up in sherryI2Byte (the code's four weights as
// one I2-style byte, w+1 in bits 2p…2p+1), and multiply field p of a
// vector of such bytes with "plane" p of the activations: the activations
// 4i+p of the codes i in the vector. They read the planes from a copy of
// the activations that the wrapper (sherrySIMD) makes once per call with
// an in-register transpose (NEON: LD4), paid once for the call's rows.

// sherryI2Byte[c] is the code c's four weights as an I2-style byte:
// bits 2p…2p+1 hold w_p+1 (0, 1 or 2).
var sherryI2Byte = func() (t [32]byte) {
	for c := range 32 {
		for p, w := range sherryWeights[c] {
			t[c] |= byte(w+1) << (2 * p)
		}
	}
	return
}()

// sherryTail returns Σ w·q over a row's weights from the first whole
// multiple of unit on (k%unit of them, whole 32-weight groups), plus the Σq
// over them, which a kernel that sums Σ code·q over the units needs to
// correct by: the row's Σ w·q is kernel − total + tail.
func sherryTail(row []byte, q []int8, unit int) int32 {
	full := len(q) / unit * unit
	s := sherryDot(row[full*5/32:], q[full:], 0)
	for _, v := range q[full:] {
		s += int32(v)
	}
	return s
}

// sherryRowsGo is the portable decode product: out[r] =
// float32(Σ w·q of row r) · scale[r] · xs (tests compare the SIMD rows
// kernels with it).
func sherryRowsGo(rows []byte, q []int8, _ int32, xs float32, scale, out []float32) {
	rb := len(q) * 5 / 32
	for r := range out {
		out[r] = float32(sherryDot(rows[r*rb:(r+1)*rb], q, 0)) * scale[r] * xs
	}
}

// sherryRows4Go is the portable prefill product: out[4r+t] = Σ w·q of row
// r and activation row t (q holds four, k apart).
func sherryRows4Go(rows []byte, q []int8, k int, _ []int32, out []int32) {
	rb := k * 5 / 32
	for r := range len(out) / 4 {
		for t := range 4 {
			out[4*r+t] = sherryDot(rows[r*rb:(r+1)*rb], q[t*k:(t+1)*k], 0)
		}
	}
}

// sherryPrefillTile is how many rows one rows4 call takes (with its four
// tokens): the tokens' activations stay in L1 while the tile's rows go by
// (and the tile's rows, at most 276 KB at K = 6912, stay in L2 for the
// next four tokens), and the x86 kernels' transpose of them is paid once
// per tile. 256 rather than 64: 12-layer prefill 316–320 tok/s against
// 300, the transposes ~6% of it at 64 (a call's rows, 160 for BitNet-2B's
// 2560 on two cores, are then one tile).
const sherryPrefillTile = 256

// mulSherry runs a Sherry matrix in its file layout with the table's
// native kernels: four tokens a call (rows4) while four remain, then one
// token a call over all rows (rows: decode).
func (l *ternLinear) mulSherry(out []float32, ldo int, a *acts, r0, r1 int) {
	tk := &a.kern.tern[typeSherry]
	k, rb := a.k, l.rowBytes
	t4 := 0 // tokens done four at a time
	if tk.rows4 != nil {
		t4 = a.n &^ 3
	}
	if t4 > 0 {
		var sums [4 * sherryPrefillTile]int32
		for r := r0; r < r1; r += sherryPrefillTile {
			e := min(r+sherryPrefillTile, r1)
			s := sums[:4*(e-r)]
			for t := 0; t < t4; t += 4 {
				tk.rows4(l.data[r*rb:e*rb], a.q[t*k:(t+4)*k], k, a.total[t:t+4], s)
				for i := r; i < e; i++ {
					sc := l.rowScale[i]
					for j := range 4 {
						out[(t+j)*ldo+i] = float32(s[4*(i-r)+j]) * sc * a.scale[t+j]
					}
				}
			}
		}
	}
	for t := t4; t < a.n; t++ {
		tk.rows(l.data[r0*rb:r1*rb], a.q[t*k:(t+1)*k], a.total[t], a.scale[t], l.rowScale[r0:r1], out[t*ldo+r0:t*ldo+r1])
	}
}

// sherryScratch holds the x86 kernels' plane-order copies of the
// activations, one per call in flight.
var sherryScratch = sync.Pool{New: func() any { return new([]int8) }}

// planesFor returns a scratch buffer of n bytes (give it back with
// sherryScratch.Put).
func planesFor(n int) *[]int8 {
	b := sherryScratch.Get().(*[]int8)
	if cap(*b) < n {
		*b = make([]int8, n)
	}
	*b = (*b)[:n]
	return b
}

// sherrySIMD adapts one instruction set's Sherry kernels (units of unit
// weights) to the table's rows and rows4.
type sherrySIMD struct {
	unit     int
	maxUnits int // longer rows take the portable kernels (0: no bound)
	// planes writes nu units of activations in plane order: within each
	// unit, plane p (unit/4 bytes at p·unit/4) holds the activations 4c+p
	// of the unit's codes c, in order, or, with order set, byte 16m+j of
	// a plane holds code 16m+order[j] (the AVX2 decoder's order).
	planes func(dst, src *int8, nu int)
	order  *[16]byte
	rows   func(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer)
	rows4  func(rows *byte, planes *int8, kp, nu, stride, n int, out *int32)
}

// rowsKernel is ternKernels.rows: the activations to plane order once,
// then the kernel over all rows. Rows whose K is not a multiple of the
// unit take the kernel's integer sums and add the rest (sherryTail).
func (s *sherrySIMD) rowsKernel(rows []byte, q []int8, total int32, xs float32, scale, out []float32) {
	k, n := len(q), len(out)
	nu, rb := k/s.unit, k*5/32
	if n == 0 {
		return
	}
	_ = rows[n*rb-1]
	_ = scale[n-1]
	if nu == 0 || s.maxUnits > 0 && nu > s.maxUnits {
		sherryRowsGo(rows, q, total, xs, scale, out)
		return
	}
	buf := planesFor(nu * s.unit)
	p := unsafe.SliceData(*buf)
	s.planes(p, unsafe.SliceData(q), nu)
	if nu*s.unit == k {
		s.rows(unsafe.SliceData(rows), p, nu, rb, n, total, xs, unsafe.SliceData(scale), unsafe.Pointer(unsafe.SliceData(out)))
	} else {
		var sums [64]int32
		for r := 0; r < n; r += len(sums) {
			m := min(len(sums), n-r)
			s.rows(&rows[r*rb], p, nu, rb, m, 0, 0, nil, unsafe.Pointer(&sums[0]))
			for i := range m {
				d := sums[i] - total + sherryTail(rows[(r+i)*rb:(r+i+1)*rb], q, s.unit)
				out[r+i] = float32(d) * scale[r+i] * xs
			}
		}
	}
	sherryScratch.Put(buf)
}

// rows4Kernel is ternKernels.rows4: the four tokens' activations to plane
// order, then the kernel over all rows.
func (s *sherrySIMD) rows4Kernel(rows []byte, q []int8, k int, totals []int32, out []int32) {
	n := len(out) / 4
	nu, rb := k/s.unit, k*5/32
	if n == 0 {
		return
	}
	_ = rows[n*rb-1]
	_ = q[4*k-1]
	_ = totals[3]
	if nu == 0 || s.maxUnits > 0 && nu > s.maxUnits {
		sherryRows4Go(rows, q, k, totals, out)
		return
	}
	kp := nu * s.unit
	buf := planesFor(4 * kp)
	p := *buf
	for t := range 4 {
		s.planes(&p[t*kp], &q[t*k], nu)
	}
	s.rows4(unsafe.SliceData(rows), unsafe.SliceData(p), kp, nu, rb, n, unsafe.SliceData(out))
	for r := range n {
		for t := range 4 {
			d := out[4*r+t] - totals[t]
			if kp < k {
				d += sherryTail(rows[r*rb:(r+1)*rb], q[t*k:(t+1)*k], s.unit)
			}
			out[4*r+t] = d
		}
	}
	sherryScratch.Put(buf)
}
