package cpu

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/edgectl/edgectl/format/half"
)

// floatRows is a float matrix in its stored dtype (F32, F16 or BF16),
// usually an mmapped view: the embedding table (row lookups) and float
// linears, including a tied LM head, without a widened copy in memory.
type floatRows struct {
	raw  []byte
	f32  []float32 // raw viewed as float32 when dt is F32 and aligned
	dt   string
	r, c int
	// release, when set, drops the file mapping's pages of raw[off:off+n]
	// from the resident set (a no-op where raw is not a mapping). Set by
	// the loaders; whoever has read a large part once and will not read it
	// again soon (the int8 head's quantization of a tied embedding) calls it.
	release func(off, n int64)
}

func newFloatRows(raw []byte, dt string, rows, cols int) (*floatRows, error) {
	per := map[string]int{"F32": 4, "F16": 2, "BF16": 2}[dt]
	if per == 0 {
		return nil, fmt.Errorf("dtype %s is not a float matrix type (want F32, F16 or BF16)", dt)
	}
	if len(raw) != rows*cols*per {
		return nil, fmt.Errorf("%d bytes for a %d×%d %s matrix (want %d)", len(raw), rows, cols, dt, rows*cols*per)
	}
	m := &floatRows{raw: raw, dt: dt, r: rows, c: cols}
	if dt == "F32" {
		if v := viewF32(raw, rows*cols); v != nil {
			m.f32 = v
		} else {
			m.f32 = make([]float32, rows*cols)
			for i := range m.f32 {
				m.f32[i] = float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		}
	}
	return m, nil
}

// row widens row i into dst.
func (m *floatRows) row(i int, dst []float32) {
	c := m.c
	switch m.dt {
	case "F32":
		copy(dst, m.f32[i*c:(i+1)*c])
	case "F16":
		src := m.raw[2*i*c : 2*(i+1)*c]
		for j := range dst[:c] {
			dst[j] = f16Table[uint16(src[2*j])|uint16(src[2*j+1])<<8]
		}
	case "BF16":
		half.DecodeBF16(dst[:c], m.raw[2*i*c:2*(i+1)*c])
	}
}

// eachRowOnce calls fn with every row widened, on all cores (rows split
// between workers, one row buffer each), for a pass that reads the matrix
// once — quantizing a head: each chunk's mapped pages are dropped after it
// (a tied F32 embedding of BitNet-2B is 1.3 GB; its lookups later read
// back only the rows they need).
func (m *floatRows) eachRowOnce(fn func(r int, row []float32)) {
	rowBytes := int64(len(m.raw) / m.r)
	parallelRows(m.r, func(lo, hi int) {
		if m.release != nil {
			defer m.release(int64(lo)*rowBytes, int64(hi-lo)*rowBytes)
		}
		row := make([]float32, m.c)
		for r := lo; r < hi; r++ {
			m.row(r, row)
			fn(r, row)
		}
	})
}

func (m *floatRows) rows() int      { return m.r }
func (m *floatRows) cols() int      { return m.c }
func (m *floatRows) int8() bool     { return false }
func (m *floatRows) size() int64    { return int64(len(m.raw)) }
func (m *floatRows) format() string { return m.dt }

// mul multiplies a batch (prefill) with the table's gemm kernels, which
// load each weight vector once for several tokens, and a single token
// (decode), or a dtype whose gemm entry is nil, with the dot kernels.
func (m *floatRows) mul(out []float32, ldo int, a *acts, r0, r1 int) {
	k, kern := m.c, a.kern
	if a.n > 1 && r1 > r0 {
		g, x, o := &kern.gemm, a.f[:a.n*k], out[r0:]
		switch {
		case m.dt == "F32" && g.f32 != nil:
			g.f32(m.f32[r0*k:r1*k], k, x, a.n, o, ldo)
			return
		case m.dt == "F16" && g.f16 != nil:
			g.f16(m.raw[2*r0*k:2*r1*k], k, x, a.n, o, ldo)
			return
		case m.dt == "BF16" && g.bf16 != nil:
			g.bf16(m.raw[2*r0*k:2*r1*k], k, x, a.n, o, ldo)
			return
		}
	}
	for r := r0; r < r1; r++ {
		for t := range a.n {
			x := a.f[t*k : (t+1)*k]
			var v float32
			switch m.dt {
			case "F32":
				v = kern.dotF32(m.f32[r*k:(r+1)*k], x)
			case "F16":
				v = kern.dotF16(m.raw[2*r*k:2*(r+1)*k], x)
			case "BF16":
				v = kern.dotBF16(m.raw[2*r*k:2*(r+1)*k], x)
			}
			out[t*ldo+r] = v
		}
	}
}

// f16Table widens every binary16 value; a 256 KiB table beats bit twiddling
// in portable Go.
var f16Table = func() []float32 {
	t := make([]float32, 1<<16)
	for i := range t {
		t[i] = half.F16ToF32(uint16(i))
	}
	return t
}()

func dotF16Go(w []byte, x []float32) float32 {
	var s0, s1 float32
	x = x[:len(w)/2]
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += f16Table[uint16(w[2*i])|uint16(w[2*i+1])<<8] * x[i]
		s1 += f16Table[uint16(w[2*i+2])|uint16(w[2*i+3])<<8] * x[i+1]
	}
	for ; i < len(x); i++ {
		s0 += f16Table[uint16(w[2*i])|uint16(w[2*i+1])<<8] * x[i]
	}
	return s0 + s1
}

func dotBF16(w []byte, x []float32) float32 {
	var s float32
	for i := range x[:len(w)/2] {
		s += float32frombits(uint32(w[2*i])<<16|uint32(w[2*i+1])<<24) * x[i]
	}
	return s
}

func float32frombits(u uint32) float32 { return *(*float32)(unsafe.Pointer(&u)) }

// viewF32 reinterprets 4-aligned little-endian bytes as float32s (nil if
// misaligned).
func viewF32(raw []byte, n int) []float32 {
	if n == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%4 != 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(raw))), n)
}

func unsafeInt8(b []byte) []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

func unsafeBytes(b []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}
