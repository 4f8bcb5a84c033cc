package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/edgectl/edgectl/format/half"
)

var typeNames = map[DataType]string{
	Float: "FLOAT", Uint8: "UINT8", Int8: "INT8", Uint16: "UINT16", Int16: "INT16", Int32: "INT32",
	Int64: "INT64", String: "STRING", Bool: "BOOL", Float16: "FLOAT16", Double: "DOUBLE",
	Uint32: "UINT32", Uint64: "UINT64", BFloat16: "BFLOAT16",
}

func (d DataType) String() string {
	if s, ok := typeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("DataType(%d)", int32(d))
}

// Size is the element size in bytes in raw_data, 0 for types without a
// fixed size (STRING, unknown).
func (d DataType) Size() int {
	switch d {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Float, Int32, Uint32:
		return 4
	case Int64, Double, Uint64:
		return 8
	}
	return 0
}

// NumElements is the product of dims, or an error for a negative dim or
// one whose product overflows (a hostile file).
func NumElements(dims []int64) (int64, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in %v", d, dims)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("dimensions %v overflow int64", dims)
		}
		n *= d
	}
	return n, nil
}

// ExternalRef is where a tensor's data lives outside the model:
// location (relative to the model's directory), offset and length (-1:
// to the end of the file).
func (t *Tensor) ExternalRef() (location string, offset, length int64, ok bool) {
	if t.DataLocation != LocationExternal {
		return "", 0, 0, false
	}
	length = -1
	for _, kv := range t.External {
		switch kv.Key {
		case "location":
			location = kv.Value
		case "offset":
			fmt.Sscan(kv.Value, &offset)
		case "length":
			fmt.Sscan(kv.Value, &length)
		}
	}
	return location, offset, length, true
}

// Bytes is the tensor's raw little-endian data: raw_data, or the mapped
// external data. ok is false when the data is in a typed field (use
// Float64s) or external data that was not loaded (Decode; Open loads it).
func (t *Tensor) Bytes() (b []byte, ok bool) {
	if t.DataLocation == LocationExternal {
		return t.ext, t.ext != nil
	}
	if t.TypedField != 0 {
		return nil, false
	}
	return t.RawData, true
}

// Float64s decodes the tensor's values whatever field holds them
// (numeric types only; int64 beyond 2^53 loses precision).
func (t *Tensor) Float64s() ([]float64, error) {
	n, err := NumElements(t.Dims)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %v", t.Name, err)
	}
	if raw, ok := t.Bytes(); ok {
		sz := t.DataType.Size()
		if sz == 0 {
			return nil, fmt.Errorf("tensor %q: data type %v is not numeric", t.Name, t.DataType)
		}
		if int64(len(raw)) != n*int64(sz) {
			return nil, fmt.Errorf("tensor %q: %d data bytes for %d %v elements (want %d)", t.Name, len(raw), n, t.DataType, n*int64(sz))
		}
		out := make([]float64, n)
		for i := range out {
			out[i] = decodeRaw(t.DataType, raw[i*sz:])
		}
		return out, nil
	}
	out := make([]float64, 0, min(n, int64(len(t.Typed))))
	p := t.Typed
	for len(p) > 0 {
		var v float64
		switch t.TypedField {
		case 4:
			if len(p) < 4 {
				return nil, fmt.Errorf("tensor %q: float_data of %d bytes", t.Name, len(t.Typed))
			}
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
			p = p[4:]
		case 10:
			if len(p) < 8 {
				return nil, fmt.Errorf("tensor %q: double_data of %d bytes", t.Name, len(t.Typed))
			}
			v = math.Float64frombits(binary.LittleEndian.Uint64(p))
			p = p[8:]
		default: // int32_data, int64_data, uint64_data: varints
			x, k := protowire.ConsumeVarint(p)
			if k < 0 {
				return nil, fmt.Errorf("tensor %q: bad varint in field %d", t.Name, t.TypedField)
			}
			p = p[k:]
			switch {
			case t.TypedField == 11:
				v = float64(x)
			case t.TypedField == 5 && t.DataType == Float16:
				v = float64(half.F16ToF32(uint16(x)))
			case t.TypedField == 5:
				v = float64(int32(x))
			default:
				v = float64(int64(x))
			}
		}
		out = append(out, v)
	}
	if int64(len(out)) != n {
		return nil, fmt.Errorf("tensor %q: %d values for dims %v (%d elements)", t.Name, len(out), t.Dims, n)
	}
	return out, nil
}

func decodeRaw(dt DataType, b []byte) float64 {
	switch dt {
	case Float:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case Double:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case Float16:
		return float64(half.F16ToF32(binary.LittleEndian.Uint16(b)))
	case BFloat16:
		return float64(half.BF16ToF32(binary.LittleEndian.Uint16(b)))
	case Int64:
		return float64(int64(binary.LittleEndian.Uint64(b)))
	case Uint64:
		return float64(binary.LittleEndian.Uint64(b))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case Uint32:
		return float64(binary.LittleEndian.Uint32(b))
	case Int16:
		return float64(int16(binary.LittleEndian.Uint16(b)))
	case Uint16:
		return float64(binary.LittleEndian.Uint16(b))
	case Int8:
		return float64(int8(b[0]))
	case Uint8, Bool:
		return float64(b[0])
	}
	return math.NaN()
}

// FloatTensor makes a FLOAT initializer with raw_data.
func FloatTensor(name string, dims []int64, vals []float64) *Tensor {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(v)))
	}
	return &Tensor{Name: name, Dims: append([]int64{}, dims...), DataType: Float, RawData: raw}
}

// Int64Tensor makes an INT64 initializer with raw_data.
func Int64Tensor(name string, dims []int64, vals []int64) *Tensor {
	raw := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	return &Tensor{Name: name, Dims: append([]int64{}, dims...), DataType: Int64, RawData: raw}
}

// Attr looks up a node's attribute by name (nil when absent).
func (n *Node) Attr(name string) *Attribute {
	for _, a := range n.Attribute {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// IntAttr makes an INT attribute.
func IntAttr(name string, v int64) *Attribute { return &Attribute{Name: name, Type: AttrInt, I: v} }

// IntsAttr makes an INTS attribute.
func IntsAttr(name string, v ...int64) *Attribute {
	return &Attribute{Name: name, Type: AttrInts, Ints: v}
}

// FloatAttr makes a FLOAT attribute.
func FloatAttr(name string, v float32) *Attribute {
	return &Attribute{Name: name, Type: AttrFloat, F: v}
}

// TensorAttr makes a TENSOR attribute (a Constant's value).
func TensorAttr(name string, t *Tensor) *Attribute {
	return &Attribute{Name: name, Type: AttrTensor, T: t}
}

// TensorValue makes a ValueInfo for a tensor of elem type and static
// shape.
func TensorValue(name string, elem DataType, shape []int64) *ValueInfo {
	s := &Shape{}
	for _, d := range shape {
		s.Dim = append(s.Dim, Dim{Value: d, HasValue: true})
	}
	return &ValueInfo{Name: name, Type: &Type{Tensor: &TensorType{ElemType: elem, Shape: s}}}
}

// Opset is the version the model imports for the default domain ("" or
// "ai.onnx"), 0 when it imports none.
func (m *Model) Opset() int64 {
	for _, o := range m.OpsetImport {
		if o.Domain == "" || o.Domain == "ai.onnx" {
			return o.Version
		}
	}
	return 0
}
