package onnx

import (
	"fmt"
	"io"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// MaxProtoSize is protobuf's limit on one message: a model whose encoding
// is larger must keep its tensors in external data (WriteOptions).
const MaxProtoSize = math.MaxInt32

// Encoded is a serialized model held as a list of chunks: tensor data is
// referenced, not copied, so encoding a large model costs no second copy
// of its weights until it is written.
type Encoded struct {
	chunks [][]byte
	cur    []byte // owned tail, not yet in chunks
	n      int
}

// Len is the encoded size in bytes.
func (e *Encoded) Len() int { return e.n }

// WriteTo writes the encoding.
func (e *Encoded) WriteTo(w io.Writer) (int64, error) {
	e.flush()
	var total int64
	for _, c := range e.chunks {
		n, err := w.Write(c)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Bytes returns the encoding as one slice.
func (e *Encoded) Bytes() []byte {
	e.flush()
	out := make([]byte, 0, e.n)
	for _, c := range e.chunks {
		out = append(out, c...)
	}
	return out
}

func (e *Encoded) flush() {
	if len(e.cur) > 0 {
		e.chunks = append(e.chunks, e.cur)
		e.cur = nil
	}
}

func (e *Encoded) small(p []byte) { e.cur = append(e.cur, p...); e.n += len(p) }

// borrow appends p by reference (large payloads).
func (e *Encoded) borrow(p []byte) {
	if len(p) < 256 {
		e.small(p)
		return
	}
	e.flush()
	e.chunks = append(e.chunks, p)
	e.n += len(p)
}

func (e *Encoded) tag(num protowire.Number, typ protowire.Type) {
	e.cur = protowire.AppendTag(e.cur, num, typ)
	e.n += protowire.SizeTag(num)
}

func (e *Encoded) varint(num protowire.Number, v uint64) {
	e.tag(num, protowire.VarintType)
	e.cur = protowire.AppendVarint(e.cur, v)
	e.n += protowire.SizeVarint(v)
}

func (e *Encoded) bytesField(num protowire.Number, p []byte) {
	e.tag(num, protowire.BytesType)
	e.cur = protowire.AppendVarint(e.cur, uint64(len(p)))
	e.n += protowire.SizeVarint(uint64(len(p)))
	e.borrow(p)
}

func (e *Encoded) str(num protowire.Number, s string) {
	e.tag(num, protowire.BytesType)
	e.cur = protowire.AppendString(e.cur, s)
	e.n += protowire.SizeBytes(len(s))
}

func (e *Encoded) message(num protowire.Number, child *Encoded) {
	child.flush()
	e.tag(num, protowire.BytesType)
	e.cur = protowire.AppendVarint(e.cur, uint64(child.n))
	e.n += protowire.SizeVarint(uint64(child.n))
	e.flush()
	e.chunks = append(e.chunks, child.chunks...)
	e.n += child.n
}

// known writes the kept raw fields numbered below num, then lets the caller
// write field num: decoded and kept fields come out in number order.
type writer struct {
	e    *Encoded
	x    *fields
	next int // index into x.unknown
}

func newWriter(x *fields) *writer { return &writer{e: &Encoded{}, x: x} }

func (w *writer) upTo(num protowire.Number) *Encoded {
	for w.next < len(w.x.unknown) && w.x.unknown[w.next].num < num {
		w.e.borrow(w.x.unknown[w.next].b)
		w.next++
	}
	return w.e
}

func (w *writer) done() *Encoded { return w.upTo(math.MaxInt32) }

// optional fields are written when set or present on the wire.
func (w *writer) optStr(num protowire.Number, s string) {
	if s != "" || w.x.present(num) {
		w.upTo(num).str(num, s)
	}
}

func (w *writer) optInt(num protowire.Number, v int64) {
	if v != 0 || w.x.present(num) {
		w.upTo(num).varint(num, uint64(v))
	}
}

// Encode serializes m. It fails when the model is over protobuf's 2 GB
// limit (keep tensors in external data: WriteFile with ExternalData).
func Encode(m *Model) (*Encoded, error) {
	e := encodeModel(m)
	if e.n > MaxProtoSize {
		return nil, fmt.Errorf("onnx: the model encodes to %d bytes, over protobuf's 2 GiB limit: write its tensors as external data (edgectl writes them beside the model with ExternalData)", e.n)
	}
	return e, nil
}

func encodeModel(m *Model) *Encoded {
	w := newWriter(&m.fields)
	w.optInt(1, m.IRVersion)
	w.optStr(2, m.ProducerName)
	w.optStr(3, m.ProducerVersion)
	w.optStr(4, m.Domain)
	w.optInt(5, m.ModelVersion)
	w.optStr(6, m.DocString)
	if m.Graph != nil {
		w.upTo(7).message(7, encodeGraph(m.Graph))
	}
	for i := range m.OpsetImport {
		o := &m.OpsetImport[i]
		ow := newWriter(&o.fields)
		ow.optStr(1, o.Domain)
		ow.optInt(2, o.Version)
		w.upTo(8).message(8, ow.done())
	}
	return w.done()
}

func encodeGraph(g *Graph) *Encoded {
	w := newWriter(&g.fields)
	for _, n := range g.Node {
		w.upTo(1).message(1, encodeNode(n))
	}
	w.optStr(2, g.Name)
	for _, t := range g.Initializer {
		w.upTo(5).message(5, encodeTensor(t))
	}
	w.optStr(10, g.DocString)
	for _, list := range []struct {
		num protowire.Number
		vs  []*ValueInfo
	}{{11, g.Input}, {12, g.Output}, {13, g.ValueInfo}} {
		for _, v := range list.vs {
			w.upTo(list.num).message(list.num, encodeValueInfo(v))
		}
	}
	return w.done()
}

func encodeNode(n *Node) *Encoded {
	w := newWriter(&n.fields)
	for _, s := range n.Input {
		w.upTo(1).str(1, s)
	}
	for _, s := range n.Output {
		w.upTo(2).str(2, s)
	}
	w.optStr(3, n.Name)
	w.optStr(4, n.OpType)
	for _, a := range n.Attribute {
		w.upTo(5).message(5, encodeAttribute(a))
	}
	w.optStr(6, n.DocString)
	w.optStr(7, n.Domain)
	return w.done()
}

func encodeAttribute(a *Attribute) *Encoded {
	w := newWriter(&a.fields)
	w.optStr(1, a.Name)
	if a.F != 0 || a.Type == AttrFloat || a.present(2) {
		w.upTo(2).tag(2, protowire.Fixed32Type)
		w.e.cur = protowire.AppendFixed32(w.e.cur, math.Float32bits(a.F))
		w.e.n += 4
	}
	if a.I != 0 || a.Type == AttrInt || a.present(3) {
		w.upTo(3).varint(3, uint64(a.I))
	}
	if a.S != nil || a.Type == AttrString || a.present(4) {
		w.upTo(4).bytesField(4, a.S)
	}
	if a.T != nil {
		w.upTo(5).message(5, encodeTensor(a.T))
	}
	for _, f := range a.Floats { // unpacked, as onnx.proto declares it
		w.upTo(7).tag(7, protowire.Fixed32Type)
		w.e.cur = protowire.AppendFixed32(w.e.cur, math.Float32bits(f))
		w.e.n += 4
	}
	for _, v := range a.Ints {
		w.upTo(8).varint(8, uint64(v))
	}
	for _, s := range a.Strings {
		w.upTo(9).bytesField(9, s)
	}
	w.optStr(13, a.DocString)
	w.optInt(20, int64(a.Type))
	return w.done()
}

func encodeValueInfo(v *ValueInfo) *Encoded {
	w := newWriter(&v.fields)
	w.optStr(1, v.Name)
	if v.Type != nil {
		tw := newWriter(&v.Type.fields)
		if tt := v.Type.Tensor; tt != nil {
			ttw := newWriter(&tt.fields)
			ttw.optInt(1, int64(tt.ElemType))
			if tt.Shape != nil {
				sw := newWriter(&tt.Shape.fields)
				for i := range tt.Shape.Dim {
					d := &tt.Shape.Dim[i]
					dw := newWriter(&d.fields)
					if d.HasValue {
						dw.upTo(1).varint(1, uint64(d.Value))
					}
					if d.HasParam {
						dw.upTo(2).str(2, d.Param)
					}
					sw.upTo(1).message(1, dw.done())
				}
				ttw.upTo(2).message(2, sw.done())
			}
			tw.upTo(1).message(1, ttw.done())
		}
		w.upTo(2).message(2, tw.done())
	}
	w.optStr(3, v.DocString)
	return w.done()
}

func encodeTensor(t *Tensor) *Encoded {
	w := newWriter(&t.fields)
	for _, d := range t.Dims { // unpacked, as onnx.proto declares it
		w.upTo(1).varint(1, uint64(d))
	}
	w.optInt(2, int64(t.DataType))
	typed := func(num protowire.Number) {
		if t.TypedField == num && (len(t.Typed) > 0 || t.present(num)) {
			w.upTo(num).bytesField(num, t.Typed)
		}
	}
	typed(4)
	typed(5)
	typed(7)
	w.optStr(8, t.Name)
	if t.RawData != nil || t.present(9) {
		w.upTo(9).bytesField(9, t.RawData)
	}
	typed(10)
	typed(11)
	w.optStr(12, t.DocString)
	for i := range t.External {
		kv := &t.External[i]
		kw := newWriter(&kv.fields)
		kw.optStr(1, kv.Key)
		kw.optStr(2, kv.Value)
		w.upTo(13).message(13, kw.done())
	}
	w.optInt(14, int64(t.DataLocation))
	return w.done()
}
