package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/edgectl/edgectl/format/half"
)

// DType is a safetensors element type, spelled as in the header ("F16").
type DType string

const (
	BOOL   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
	F8E8M0 DType = "F8_E8M0"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	I64    DType = "I64"
	U64    DType = "U64"
	F64    DType = "F64"
	C64    DType = "C64"
	F4     DType = "F4"
	F6E2M3 DType = "F6_E2M3"
	F6E3M2 DType = "F6_E3M2"
)

// bits per element; sub-byte types are bit-packed.
var dtypeBits = map[DType]int64{
	BOOL: 8, U8: 8, I8: 8, F8E5M2: 8, F8E4M3: 8, F8E8M0: 8,
	I16: 16, U16: 16, F16: 16, BF16: 16,
	I32: 32, U32: 32, F32: 32,
	I64: 64, U64: 64, F64: 64, C64: 64,
	F4: 4, F6E2M3: 6, F6E3M2: 6,
}

// Known reports whether d is a dtype of the safetensors specification.
func (d DType) Known() bool { _, ok := dtypeBits[d]; return ok }

// Bits is the storage width of one element.
func (d DType) Bits() int64 { return dtypeBits[d] }

// IsFloat reports whether d holds floating-point values.
func (d DType) IsFloat() bool {
	switch d {
	case F16, BF16, F32, F64, F8E5M2, F8E4M3, F8E8M0, F4, F6E2M3, F6E3M2:
		return true
	}
	return false
}

// ByteSize is the storage size of n elements, rounded up to whole bytes.
func (d DType) ByteSize(n int64) int64 { return (n*d.Bits() + 7) / 8 }

// DecodeFloat32 converts little-endian F32, F16, BF16 or F64 data to float32.
// len(src) must be len(dst) times the element size.
func DecodeFloat32(dst []float32, d DType, src []byte) error {
	if int64(len(src)) != d.ByteSize(int64(len(dst))) {
		return fmt.Errorf("decode %s: %d bytes for %d elements", d, len(src), len(dst))
	}
	switch d {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		half.DecodeF16(dst, src)
	case BF16:
		half.DecodeBF16(dst, src)
	case F64:
		for i := range dst {
			dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		}
	default:
		return fmt.Errorf("dtype %s is not a float type edgectl can read (F32, F16, BF16, F64)", d)
	}
	return nil
}

// EncodeFloat32 converts float32 values to little-endian F32, F16 or BF16.
func EncodeFloat32(dst []byte, d DType, src []float32) error {
	if int64(len(dst)) != d.ByteSize(int64(len(src))) {
		return fmt.Errorf("encode %s: %d bytes for %d elements", d, len(dst), len(src))
	}
	switch d {
	case F32:
		for i, f := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
		}
	case F16:
		half.EncodeF16(dst, src)
	case BF16:
		half.EncodeBF16(dst, src)
	default:
		return fmt.Errorf("cannot encode float32 as %s (want F32, F16 or BF16)", d)
	}
	return nil
}
