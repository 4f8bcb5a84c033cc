package cpu

import (
	"fmt"

	"github.com/edgectl/edgectl/format/gguf"
)

// quantLinear is a matrix in a GGUF block type (Q8_0, Q4_K, …), kept in
// its file layout, usually an mmapped view until place copies it. Products
// read activations in the type's block form; as the token embedding, a
// row is dequantized on lookup.
type quantLinear struct {
	typ      gguf.Type
	qt       quantType
	form     blockForm
	raw      []byte // r rows of rowBytes
	rowBytes int
	r, c     int
}

// newQuantLinear wraps raw as a rows × cols matrix of type t.
func newQuantLinear(raw []byte, t gguf.Type, rows, cols int) (*quantLinear, error) {
	qt, ok := quantTypeOf(t)
	if !ok {
		return nil, fmt.Errorf("dtype %s has no CPU kernels", t)
	}
	if int64(cols)%t.BlockSize() != 0 {
		return nil, fmt.Errorf("%d columns are not a multiple of the %s block size %d", cols, t, t.BlockSize())
	}
	rb := int(t.RowSize(int64(cols)))
	if len(raw) != rows*rb {
		return nil, fmt.Errorf("%d bytes for a %d×%d %s matrix (want %d)", len(raw), rows, cols, t, rows*rb)
	}
	return &quantLinear{typ: t, qt: qt, form: quantTypes[qt].form, raw: raw, rowBytes: rb, r: rows, c: cols}, nil
}

func (l *quantLinear) rows() int      { return l.r }
func (l *quantLinear) cols() int      { return l.c }
func (l *quantLinear) int8() bool     { return false } // its own block forms (acts.prepare)
func (l *quantLinear) size() int64    { return int64(len(l.raw)) }
func (l *quantLinear) format() string { return l.typ.String() }

// row dequantizes row i into dst (embedding lookups).
func (l *quantLinear) row(i int, dst []float32) {
	// The sizes were checked when l was made.
	_ = gguf.Dequantize(l.typ, l.raw[i*l.rowBytes:(i+1)*l.rowBytes], dst[:l.c])
}

// quantTile is the rows a prefill product multiplies with every token
// before the next ones: 16 rows of K = 4096 are 36–70 KB, so each token
// after the first reads them from L2, not memory.
const quantTile = 16

// mul runs decode's rows in one kernel call, and a batch's a tile of rows
// at a time for every token.
func (l *quantLinear) mul(out []float32, ldo int, a *acts, r0, r1 int) {
	rows, rb := a.kern.quant[l.qt].rows, l.rowBytes
	if a.n == 1 {
		rows(l.raw[r0*rb:r1*rb], a.blockRow(l.form, 0), out[r0:r1])
		return
	}
	for r := r0; r < r1; r += quantTile {
		e := min(r1, r+quantTile)
		for t := range a.n {
			rows(l.raw[r*rb:e*rb], a.blockRow(l.form, t), out[t*ldo+r:t*ldo+e])
		}
	}
}
