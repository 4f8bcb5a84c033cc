// Package onnx is the one reader and writer of ONNX models (ModelProto,
// onnx.proto, proto2). It works on the protobuf wire format directly
// (google.golang.org/protobuf/encoding/protowire), decoding the fields the
// graph passes need and keeping every other field as its raw bytes, so a
// read followed by a write reproduces the file byte for byte when the file
// was written the way protobuf serializers write (fields in number order,
// onnx.proto's packed/unpacked choices). Initializer data is never copied:
// a Tensor's RawData is a slice of the decoded buffer (a read-only mmap for
// Open), and data stored outside the model (data_location EXTERNAL, for
// models over protobuf's 2 GB limit) is mapped from its file.
package onnx

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// Model is a ModelProto.
type Model struct {
	IRVersion       int64
	OpsetImport     []OpsetID
	ProducerName    string
	ProducerVersion string
	Domain          string
	ModelVersion    int64
	DocString       string
	Graph           *Graph
	fields
}

// OpsetID is an OperatorSetIdProto: the operator set version a model uses
// for a domain ("" or "ai.onnx" is the default domain).
type OpsetID struct {
	Domain  string
	Version int64
	fields
}

// Graph is a GraphProto. Sparse initializers, quantization annotations
// and anything newer are kept as raw fields.
type Graph struct {
	Node        []*Node
	Name        string
	Initializer []*Tensor
	DocString   string
	Input       []*ValueInfo
	Output      []*ValueInfo
	ValueInfo   []*ValueInfo
	fields
}

// Node is a NodeProto.
type Node struct {
	Input     []string
	Output    []string
	Name      string
	OpType    string
	Attribute []*Attribute
	DocString string
	Domain    string
	fields
}

// AttrType is AttributeProto.AttributeType.
type AttrType int32

// The attribute types the passes read; others (graphs, sparse tensors,
// type protos) stay raw.
const (
	AttrFloat   AttrType = 1
	AttrInt     AttrType = 2
	AttrString  AttrType = 3
	AttrTensor  AttrType = 4
	AttrGraph   AttrType = 5
	AttrFloats  AttrType = 6
	AttrInts    AttrType = 7
	AttrStrings AttrType = 8
	AttrTensors AttrType = 9
)

// Attribute is an AttributeProto. The value field its Type names is always
// written (as onnx.helper sets it, so axis=0 is kept).
type Attribute struct {
	Name      string
	F         float32
	I         int64
	S         []byte
	T         *Tensor
	Floats    []float32
	Ints      []int64
	Strings   [][]byte
	DocString string
	Type      AttrType
	fields
}

// ValueInfo is a ValueInfoProto: a tensor's name and type.
type ValueInfo struct {
	Name      string
	Type      *Type
	DocString string
	fields
}

// Type is a TypeProto. Only tensor types are decoded (ElemType, Shape);
// sequence, map, optional and sparse types stay raw.
type Type struct {
	Tensor *TensorType
	fields
}

// TensorType is TypeProto.Tensor.
type TensorType struct {
	ElemType DataType
	Shape    *Shape // nil: rank unknown
	fields
}

// Shape is a TensorShapeProto.
type Shape struct {
	Dim []Dim
	fields
}

// Dim is one TensorShapeProto.Dimension: a number, a symbolic name, or
// neither (unknown).
type Dim struct {
	Value    int64
	Param    string
	HasValue bool // dim_value was set (it may be 0)
	HasParam bool
	fields
}

// DataType is TensorProto.DataType.
type DataType int32

// The element types.
const (
	Float    DataType = 1
	Uint8    DataType = 2
	Int8     DataType = 3
	Uint16   DataType = 4
	Int16    DataType = 5
	Int32    DataType = 6
	Int64    DataType = 7
	String   DataType = 8
	Bool     DataType = 9
	Float16  DataType = 10
	Double   DataType = 11
	Uint32   DataType = 12
	Uint64   DataType = 13
	BFloat16 DataType = 16
)

// Tensor is a TensorProto: an initializer or a Constant's value. The data
// is in RawData, in Typed (the packed payload of float_data, int32_data,
// int64_data, double_data or uint64_data, as TypedField says), or outside
// the model (DataLocation External; see ExternalRef and Bytes).
type Tensor struct {
	Dims         []int64
	DataType     DataType
	Name         string
	DocString    string
	RawData      []byte
	Typed        []byte
	TypedField   protowire.Number
	External     []KeyValue
	DataLocation int32
	fields

	ext []byte // external data, mapped by Open
}

// KeyValue is a StringStringEntryProto.
type KeyValue struct {
	Key, Value string
	fields
}

// DataLocation values.
const (
	LocationDefault  = 0
	LocationExternal = 1
)

// fields is what every message keeps besides its decoded fields: the raw
// fields it does not decode (written back in field-number order among the
// decoded ones) and which optional scalars were present on the wire, so an
// explicit zero or empty string is written back.
type fields struct {
	unknown []rawField
	has     uint64 // bit n: optional field n was present
}

type rawField struct {
	num protowire.Number
	b   []byte // tag and value, as read
}

func (f *fields) set(n protowire.Number)          { f.has |= 1 << uint(n) }
func (f *fields) present(n protowire.Number) bool { return f.has&(1<<uint(n)) != 0 }
