// Package gguf reads and writes GGUF v3 files (llama.cpp's model container).
// It is edgectl's only GGUF parser: quant writes through it, and inspect and
// the CPU engine read through it.
//
// Layout (formats.md §3): "GGUF", u32 version, i64 n_tensors, i64 n_kv, the
// typed key/value pairs, the tensor table, zero padding to general.alignment
// (default 32), then the data section. Tensor offsets are relative to the data
// section and aligned. ne[0] is the contiguous dimension, so a Linear weight
// of HF shape [out, in] is stored with ne = {in, out}.
package gguf

import (
	"fmt"
	"strings"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// Version is the GGUF version this package writes (it reads 2 and 3).
const Version = 3

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// Type is a ggml tensor type id (enum ggml_type).
type Type uint32

// ggml type ids (ggml/include/ggml.h). Ids 4, 5 and 31–33 were removed
// upstream and are invalid.
const (
	TypeF32     Type = 0
	TypeF16     Type = 1
	TypeQ4_0    Type = 2
	TypeQ4_1    Type = 3
	TypeQ5_0    Type = 6
	TypeQ5_1    Type = 7
	TypeQ8_0    Type = 8
	TypeQ8_1    Type = 9
	TypeQ2_K    Type = 10
	TypeQ3_K    Type = 11
	TypeQ4_K    Type = 12
	TypeQ5_K    Type = 13
	TypeQ6_K    Type = 14
	TypeQ8_K    Type = 15
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ4_NL  Type = 20
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ4_XS  Type = 23
	TypeI8      Type = 24
	TypeI16     Type = 25
	TypeI32     Type = 26
	TypeI64     Type = 27
	TypeF64     Type = 28
	TypeIQ1_M   Type = 29
	TypeBF16    Type = 30
	TypeTQ1_0   Type = 34
	TypeTQ2_0   Type = 35
	TypeMXFP4   Type = 39
)

type typeInfo struct {
	name      string
	blockSize int64 // elements per block
	typeSize  int64 // bytes per block
}

var types = map[Type]typeInfo{
	TypeF32: {"F32", 1, 4}, TypeF16: {"F16", 1, 2}, TypeBF16: {"BF16", 1, 2},
	TypeQ4_0: {"Q4_0", 32, 18}, TypeQ4_1: {"Q4_1", 32, 20},
	TypeQ5_0: {"Q5_0", 32, 22}, TypeQ5_1: {"Q5_1", 32, 24},
	TypeQ8_0: {"Q8_0", 32, 34}, TypeQ8_1: {"Q8_1", 32, 36},
	TypeQ2_K: {"Q2_K", 256, 84}, TypeQ3_K: {"Q3_K", 256, 110}, TypeQ4_K: {"Q4_K", 256, 144},
	TypeQ5_K: {"Q5_K", 256, 176}, TypeQ6_K: {"Q6_K", 256, 210}, TypeQ8_K: {"Q8_K", 256, 292},
	TypeIQ2_XXS: {"IQ2_XXS", 256, 66}, TypeIQ2_XS: {"IQ2_XS", 256, 74}, TypeIQ3_XXS: {"IQ3_XXS", 256, 98},
	TypeIQ1_S: {"IQ1_S", 256, 50}, TypeIQ4_NL: {"IQ4_NL", 32, 18}, TypeIQ3_S: {"IQ3_S", 256, 110},
	TypeIQ2_S: {"IQ2_S", 256, 82}, TypeIQ4_XS: {"IQ4_XS", 256, 136},
	TypeI8: {"I8", 1, 1}, TypeI16: {"I16", 1, 2}, TypeI32: {"I32", 1, 4}, TypeI64: {"I64", 1, 8},
	TypeF64: {"F64", 1, 8}, TypeIQ1_M: {"IQ1_M", 256, 56},
	TypeTQ1_0: {"TQ1_0", 256, 54}, TypeTQ2_0: {"TQ2_0", 256, 66},
	TypeMXFP4: {"MXFP4", 32, 17},
}

// Known reports whether t is a ggml type this package can size.
func (t Type) Known() bool { _, ok := types[t]; return ok }

// String is the ggml name ("TQ2_0"), or "type(N)" for an unknown id.
func (t Type) String() string {
	if i, ok := types[t]; ok {
		return i.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements per block (1 for plain types).
func (t Type) BlockSize() int64 { return types[t].blockSize }

// TypeSize is the number of bytes per block.
func (t Type) TypeSize() int64 { return types[t].typeSize }

// RowSize is the byte size of ne0 elements; ne0 must be a multiple of the
// block size.
func (t Type) RowSize(ne0 int64) int64 {
	i := types[t]
	if i.blockSize == 0 {
		return 0
	}
	return ne0 / i.blockSize * i.typeSize
}

// TypeByName looks a ggml type up by its name ("tq2_0" or "TQ2_0").
func TypeByName(name string) (Type, bool) {
	for t, i := range types {
		if strings.EqualFold(i.name, name) {
			return t, true
		}
	}
	return 0, false
}

// ValueType is the type tag of a metadata value (enum gguf_type).
type ValueType uint32

// Metadata value types.
const (
	ValU8     ValueType = 0
	ValI8     ValueType = 1
	ValU16    ValueType = 2
	ValI16    ValueType = 3
	ValU32    ValueType = 4
	ValI32    ValueType = 5
	ValF32    ValueType = 6
	ValBool   ValueType = 7
	ValString ValueType = 8
	ValArray  ValueType = 9
	ValU64    ValueType = 10
	ValI64    ValueType = 11
	ValF64    ValueType = 12
)

var valueNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

func (v ValueType) String() string {
	if int(v) < len(valueNames) {
		return valueNames[v]
	}
	return fmt.Sprintf("valuetype(%d)", uint32(v))
}

// fixedSize is the encoded size of a scalar value type (0 for string/array).
func (v ValueType) fixedSize() int64 {
	switch v {
	case ValU8, ValI8, ValBool:
		return 1
	case ValU16, ValI16:
		return 2
	case ValU32, ValI32, ValF32:
		return 4
	case ValU64, ValI64, ValF64:
		return 8
	}
	return 0
}

// LLAMA_FTYPE values for general.file_type (include/llama.h).
const (
	FileTypeAllF32    uint32 = 0
	FileTypeMostlyF16 uint32 = 1
	FileTypeTQ1_0     uint32 = 36
	FileTypeTQ2_0     uint32 = 37
)

// fileTypeNames are llama-quantize's names of the general.file_type
// values (the mix a file was quantized with: Q4_K_M keeps some tensors in
// Q6_K). Gaps are ids llama.cpp removed.
var fileTypeNames = map[uint32]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
}

// FileTypeName is the name of a general.file_type value ("Q4_K_M"), or ""
// for an id llama.cpp does not define.
func FileTypeName(ft uint32) string { return fileTypeNames[ft] }
