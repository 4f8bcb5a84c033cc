package onnx

import (
	"fmt"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// DecodeError is a malformed model: the message being read, the byte
// offset in the model file, and what is wrong there.
type DecodeError struct {
	Msg    string // the message type, e.g. "NodeProto"
	Offset int
	Err    string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("onnx: %s at byte %d: %s (the file is not an ONNX model or is truncated; re-export it)", e.Msg, e.Offset, e.Err)
}

// Decode parses an ONNX ModelProto. The result's byte fields (RawData,
// Typed, raw unknown fields) are slices of b: keep b alive and unchanged
// while the model is in use. Memory is bounded by len(b): every decoded
// element is backed by at least one input byte.
func Decode(b []byte) (*Model, error) {
	m := &Model{}
	d := decoder{}
	if err := d.model(m, b, 0); err != nil {
		return nil, err
	}
	return m, nil
}

type decoder struct{}

// wireField is one field as read: number, wire type, scalar value or
// bytes payload, the raw encoding and its offset.
type wireField struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte // BytesType payload
	raw []byte
	off int // offset of b (payload) for BytesType, of the tag otherwise
}

// each calls fn for every field of the message encoded in b (at file
// offset off).
func each(msg string, b []byte, off int, fn func(f wireField) error) error {
	pos := 0
	for pos < len(b) {
		num, typ, n := protowire.ConsumeTag(b[pos:])
		if n < 0 {
			return &DecodeError{msg, off + pos, "bad field tag: " + protowire.ParseError(n).Error()}
		}
		m := protowire.ConsumeFieldValue(num, typ, b[pos+n:])
		if m < 0 {
			return &DecodeError{msg, off + pos, fmt.Sprintf("field %d: %v", num, protowire.ParseError(m))}
		}
		f := wireField{num: num, typ: typ, raw: b[pos : pos+n+m], off: off + pos}
		val := b[pos+n : pos+n+m]
		switch typ {
		case protowire.VarintType:
			f.v, _ = protowire.ConsumeVarint(val)
		case protowire.Fixed32Type:
			v, _ := protowire.ConsumeFixed32(val)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, _ = protowire.ConsumeFixed64(val)
		case protowire.BytesType:
			p, k := protowire.ConsumeBytes(val)
			f.b, f.off = p, off+pos+n+k-len(p)
		}
		if err := fn(f); err != nil {
			return err
		}
		pos += n + m
	}
	return nil
}

// want checks a known field's wire type.
func want(msg string, f wireField, typ protowire.Type) error {
	if f.typ != typ {
		return &DecodeError{msg, f.off, fmt.Sprintf("field %d has wire type %d, want %d", f.num, f.typ, typ)}
	}
	return nil
}

func (x *fields) keep(f wireField) { x.unknown = append(x.unknown, rawField{f.num, f.raw}) }

// sortUnknown orders kept fields by number (stable), the order they are
// written back in among the decoded ones.
func (x *fields) sortUnknown() {
	sort.SliceStable(x.unknown, func(i, j int) bool { return x.unknown[i].num < x.unknown[j].num })
}

// message decodes one message's fields: known decodes a field and says
// whether it is one it knows; every other field is kept raw, and the
// known ones are marked present.
func message(msg string, x *fields, b []byte, off int, known func(f wireField) (bool, error)) error {
	err := each(msg, b, off, func(f wireField) error {
		ok, err := known(f)
		if !ok {
			x.keep(f)
			return nil
		}
		x.set(f.num)
		return err
	})
	x.sortUnknown()
	return err
}

// sub decodes an embedded message field with dec.
func sub(msg string, f wireField, dec func(b []byte, off int) error) error {
	if err := want(msg, f, protowire.BytesType); err != nil {
		return err
	}
	return dec(f.b, f.off)
}

func (d *decoder) model(m *Model, b []byte, off int) error {
	const msg = "ModelProto"
	return message(msg, &m.fields, b, off, func(f wireField) (bool, error) {
		switch f.num {
		case 1:
			return true, setInt(msg, f, &m.IRVersion)
		case 2:
			return true, setStr(msg, f, &m.ProducerName)
		case 3:
			return true, setStr(msg, f, &m.ProducerVersion)
		case 4:
			return true, setStr(msg, f, &m.Domain)
		case 5:
			return true, setInt(msg, f, &m.ModelVersion)
		case 6:
			return true, setStr(msg, f, &m.DocString)
		case 7:
			m.Graph = &Graph{}
			return true, sub(msg, f, func(b []byte, off int) error { return d.graph(m.Graph, b, off) })
		case 8:
			m.OpsetImport = append(m.OpsetImport, OpsetID{})
			o := &m.OpsetImport[len(m.OpsetImport)-1]
			return true, sub(msg, f, func(b []byte, off int) error {
				return message("OperatorSetIdProto", &o.fields, b, off, func(g wireField) (bool, error) {
					switch g.num {
					case 1:
						return true, setStr("OperatorSetIdProto", g, &o.Domain)
					case 2:
						return true, setInt("OperatorSetIdProto", g, &o.Version)
					}
					return false, nil
				})
			})
		}
		return false, nil
	})
}

func (d *decoder) graph(g *Graph, b []byte, off int) error {
	const msg = "GraphProto"
	return message(msg, &g.fields, b, off, func(f wireField) (bool, error) {
		switch f.num {
		case 1:
			n := &Node{}
			g.Node = append(g.Node, n)
			return true, sub(msg, f, func(b []byte, off int) error { return d.node(n, b, off) })
		case 2:
			return true, setStr(msg, f, &g.Name)
		case 5:
			t := &Tensor{}
			g.Initializer = append(g.Initializer, t)
			return true, sub(msg, f, func(b []byte, off int) error { return d.tensor(t, b, off) })
		case 10:
			return true, setStr(msg, f, &g.DocString)
		case 11, 12, 13:
			v := &ValueInfo{}
			switch f.num {
			case 11:
				g.Input = append(g.Input, v)
			case 12:
				g.Output = append(g.Output, v)
			default:
				g.ValueInfo = append(g.ValueInfo, v)
			}
			return true, sub(msg, f, func(b []byte, off int) error { return d.valueInfo(v, b, off) })
		}
		return false, nil
	})
}

func (d *decoder) node(n *Node, b []byte, off int) error {
	const msg = "NodeProto"
	return message(msg, &n.fields, b, off, func(f wireField) (bool, error) {
		var s string
		switch f.num {
		case 1, 2:
			err := setStr(msg, f, &s)
			if f.num == 1 {
				n.Input = append(n.Input, s)
			} else {
				n.Output = append(n.Output, s)
			}
			return true, err
		case 3:
			return true, setStr(msg, f, &n.Name)
		case 4:
			return true, setStr(msg, f, &n.OpType)
		case 5:
			a := &Attribute{}
			n.Attribute = append(n.Attribute, a)
			return true, sub(msg, f, func(b []byte, off int) error { return d.attribute(a, b, off) })
		case 6:
			return true, setStr(msg, f, &n.DocString)
		case 7:
			return true, setStr(msg, f, &n.Domain)
		}
		return false, nil
	})
}

func (d *decoder) attribute(a *Attribute, b []byte, off int) error {
	const msg = "AttributeProto"
	return message(msg, &a.fields, b, off, func(f wireField) (bool, error) {
		var err error
		switch f.num {
		case 1:
			err = setStr(msg, f, &a.Name)
		case 2:
			err = want(msg, f, protowire.Fixed32Type)
			a.F = math.Float32frombits(uint32(f.v))
		case 3:
			err = setInt(msg, f, &a.I)
		case 4:
			err = want(msg, f, protowire.BytesType)
			a.S = f.b
		case 5:
			a.T = &Tensor{}
			err = sub(msg, f, func(b []byte, off int) error { return d.tensor(a.T, b, off) })
		case 7:
			a.Floats, err = appendFloats(msg, a.Floats, f)
		case 8:
			a.Ints, err = appendVarints(msg, a.Ints, f)
		case 9:
			err = want(msg, f, protowire.BytesType)
			a.Strings = append(a.Strings, f.b)
		case 13:
			err = setStr(msg, f, &a.DocString)
		case 20:
			err = want(msg, f, protowire.VarintType)
			a.Type = AttrType(int32(f.v))
		default:
			return false, nil
		}
		return true, err
	})
}

// appendFloats reads a repeated float field, packed or not.
func appendFloats(msg string, dst []float32, f wireField) ([]float32, error) {
	switch f.typ {
	case protowire.Fixed32Type:
		return append(dst, math.Float32frombits(uint32(f.v))), nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return dst, &DecodeError{msg, f.off, fmt.Sprintf("packed floats of %d bytes, not a multiple of 4", len(f.b))}
		}
		for i := 0; i < len(f.b); i += 4 {
			v, _ := protowire.ConsumeFixed32(f.b[i:])
			dst = append(dst, math.Float32frombits(v))
		}
		return dst, nil
	}
	return dst, want(msg, f, protowire.Fixed32Type)
}

// appendVarints reads a repeated int64 field, packed or not.
func appendVarints(msg string, dst []int64, f wireField) ([]int64, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, int64(f.v)), nil
	case protowire.BytesType:
		for p := f.b; len(p) > 0; {
			v, n := protowire.ConsumeVarint(p)
			if n < 0 {
				return dst, &DecodeError{msg, f.off + len(f.b) - len(p), "bad packed varint"}
			}
			dst = append(dst, int64(v))
			p = p[n:]
		}
		return dst, nil
	}
	return dst, want(msg, f, protowire.VarintType)
}

func (d *decoder) valueInfo(v *ValueInfo, b []byte, off int) error {
	const msg = "ValueInfoProto"
	return message(msg, &v.fields, b, off, func(f wireField) (bool, error) {
		switch f.num {
		case 1:
			return true, setStr(msg, f, &v.Name)
		case 2:
			v.Type = &Type{}
			return true, sub(msg, f, func(b []byte, off int) error { return d.typ(v.Type, b, off) })
		case 3:
			return true, setStr(msg, f, &v.DocString)
		}
		return false, nil
	})
}

func (d *decoder) typ(t *Type, b []byte, off int) error {
	return message("TypeProto", &t.fields, b, off, func(f wireField) (bool, error) {
		if f.num != 1 {
			return false, nil
		}
		t.Tensor = &TensorType{}
		return true, sub("TypeProto", f, func(b []byte, off int) error { return d.tensorType(t.Tensor, b, off) })
	})
}

func (d *decoder) tensorType(t *TensorType, b []byte, off int) error {
	const msg = "TypeProto.Tensor"
	return message(msg, &t.fields, b, off, func(f wireField) (bool, error) {
		switch f.num {
		case 1:
			t.ElemType = DataType(int32(f.v))
			return true, want(msg, f, protowire.VarintType)
		case 2:
			t.Shape = &Shape{}
			return true, sub(msg, f, func(b []byte, off int) error { return d.shape(t.Shape, b, off) })
		}
		return false, nil
	})
}

func (d *decoder) shape(s *Shape, b []byte, off int) error {
	const msg, dmsg = "TensorShapeProto", "TensorShapeProto.Dimension"
	return message(msg, &s.fields, b, off, func(f wireField) (bool, error) {
		if f.num != 1 {
			return false, nil
		}
		s.Dim = append(s.Dim, Dim{})
		dim := &s.Dim[len(s.Dim)-1]
		return true, sub(msg, f, func(b []byte, off int) error {
			return message(dmsg, &dim.fields, b, off, func(g wireField) (bool, error) {
				switch g.num {
				case 1:
					dim.HasValue = true
					return true, setInt(dmsg, g, &dim.Value)
				case 2:
					dim.HasParam = true
					return true, setStr(dmsg, g, &dim.Param)
				}
				return false, nil
			})
		})
	})
}

func (d *decoder) tensor(t *Tensor, b []byte, off int) error {
	const msg, kvmsg = "TensorProto", "StringStringEntryProto"
	return message(msg, &t.fields, b, off, func(f wireField) (bool, error) {
		var err error
		switch f.num {
		case 1:
			t.Dims, err = appendVarints(msg, t.Dims, f)
		case 2:
			err = want(msg, f, protowire.VarintType)
			t.DataType = DataType(int32(f.v))
		case 4, 5, 7, 10, 11:
			err = t.addTyped(msg, f)
		case 8:
			err = setStr(msg, f, &t.Name)
		case 9:
			err = want(msg, f, protowire.BytesType)
			t.RawData = f.b
		case 12:
			err = setStr(msg, f, &t.DocString)
		case 13:
			t.External = append(t.External, KeyValue{})
			kv := &t.External[len(t.External)-1]
			err = sub(msg, f, func(b []byte, off int) error {
				return message(kvmsg, &kv.fields, b, off, func(g wireField) (bool, error) {
					switch g.num {
					case 1:
						return true, setStr(kvmsg, g, &kv.Key)
					case 2:
						return true, setStr(kvmsg, g, &kv.Value)
					}
					return false, nil
				})
			})
		case 14:
			err = want(msg, f, protowire.VarintType)
			t.DataLocation = int32(f.v)
		default:
			return false, nil
		}
		return true, err
	})
}

// addTyped takes one of the packed typed-data fields. Packed (as onnx.proto
// declares them) payloads are kept as slices; the rare unpacked encoding
// is converted to a packed payload (written back packed).
func (t *Tensor) addTyped(msg string, f wireField) error {
	if t.TypedField != 0 && t.TypedField != f.num {
		return &DecodeError{msg, f.off, fmt.Sprintf("tensor %q has both field %d and %d data", t.Name, t.TypedField, f.num)}
	}
	t.TypedField = f.num
	if f.typ == protowire.BytesType {
		if t.Typed == nil {
			t.Typed = f.b
		} else {
			t.Typed = append(append([]byte(nil), t.Typed...), f.b...)
		}
		return nil
	}
	var enc []byte
	switch {
	case (f.num == 4) && f.typ == protowire.Fixed32Type:
		enc = protowire.AppendFixed32(nil, uint32(f.v))
	case f.num == 10 && f.typ == protowire.Fixed64Type:
		enc = protowire.AppendFixed64(nil, f.v)
	case (f.num == 5 || f.num == 7 || f.num == 11) && f.typ == protowire.VarintType:
		enc = protowire.AppendVarint(nil, f.v)
	default:
		return &DecodeError{msg, f.off, fmt.Sprintf("tensor %q data field %d has wire type %d", t.Name, f.num, f.typ)}
	}
	t.Typed = append(append([]byte(nil), t.Typed...), enc...)
	return nil
}

// setStr and setInt take a string or int64 field after checking its wire
// type.
func setStr(msg string, f wireField, dst *string) error {
	*dst = string(f.b)
	return want(msg, f, protowire.BytesType)
}

func setInt(msg string, f wireField, dst *int64) error {
	*dst = int64(f.v)
	return want(msg, f, protowire.VarintType)
}
