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

// quantTileRows is the rows a prefill product multiplies with every token
// before the next ones, for rows of rb bytes: as many as fit 128 KB (from
// 16 to 64), so each token group after the first reads them from L2, not
// memory, and the multi-token kernels' per-call work (packing a group's
// activations) is spread over many rows.
func quantTileRows(rb int) int { return min(64, max(16, (128<<10)/max(rb, 1))) }

// mul runs decode's rows in one kernel call, and a batch's a tile of rows
// at a time for every token: groups of the table's rowsN tokens in one
// call each, the tokens left over one by one — or, when they are at
// least half a group, as one more group ending at the last token, which
// overlaps the last whole group (its tokens are computed again, the same
// values): a multi-token kernel costs a token a third to four fifths of
// what the one-token kernel does (BenchmarkTileKernels).
func (l *quantLinear) mul(out []float32, ldo int, a *acts, r0, r1 int) {
	qk, rb := &a.kern.quant[l.qt], l.rowBytes
	if a.n == 1 {
		qk.rows(l.raw[r0*rb:r1*rb], a.blockRow(l.form, 0), out[r0:r1])
		return
	}
	g, grouped, last := qk.tokens, 0, -1
	if qk.rowsN != nil && g > 1 {
		grouped = a.n / g * g
		if left := a.n - grouped; grouped > 0 && 2*left >= g {
			last = a.n - g
		}
	}
	tile := quantTileRows(rb)
	for r := r0; r < r1; r += tile {
		e := min(r1, r+tile)
		w := l.raw[r*rb : e*rb]
		for t := 0; t < grouped; t += g {
			qk.rowsN(w, tileActs(a, l.form, t, t+g), out[t*ldo+r:(t+g-1)*ldo+e], ldo)
		}
		if last >= 0 {
			qk.rowsN(w, tileActs(a, l.form, last, a.n), out[last*ldo+r:(a.n-1)*ldo+e], ldo)
			continue
		}
		for t := grouped; t < a.n; t++ {
			qk.rows(w, a.blockRow(l.form, t), out[t*ldo+r:t*ldo+e])
		}
	}
}
