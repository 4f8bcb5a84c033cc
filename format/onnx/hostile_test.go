package onnx_test

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/edgectl/edgectl/format/onnx"
)

// TestDecodeErrorsSayWhere: a truncated or mistyped model fails with the
// message type and byte offset.
func TestDecodeErrorsSayWhere(t *testing.T) {
	b := encode(t, smallViT())
	if _, err := onnx.Decode(b[:len(b)/2]); err == nil || !strings.Contains(err.Error(), "at byte") {
		t.Fatalf("truncated model: %v", err)
	}
	bad := protowire.AppendTag(nil, 7, protowire.VarintType) // graph as a number
	bad = protowire.AppendVarint(bad, 3)
	if _, err := onnx.Decode(bad); err == nil || !strings.Contains(err.Error(), "ModelProto at byte 0") {
		t.Fatalf("mistyped graph: %v", err)
	}
}

// TestHostileSizesBounded: dims claiming 2^62 elements, or overflowing
// int64, fail in Float64s before anything is allocated.
func TestHostileSizesBounded(t *testing.T) {
	for _, dims := range [][]int64{{1 << 31, 1 << 31}, {1 << 62, 4}, {-1}} {
		tn := &onnx.Tensor{Name: "big", Dims: dims, DataType: onnx.Float, RawData: make([]byte, 16)}
		if _, err := tn.Float64s(); err == nil {
			t.Fatalf("dims %v accepted", dims)
		}
		tn = &onnx.Tensor{Name: "big", Dims: dims, DataType: onnx.Float, TypedField: 4, Typed: make([]byte, 16)}
		if _, err := tn.Float64s(); err == nil {
			t.Fatalf("dims %v accepted in float_data", dims)
		}
	}
}

// FuzzDecode: any input decodes or fails without panicking, in memory
// bounded by its size; what decodes re-encodes to a fixed point.
func FuzzDecode(f *testing.F) {
	f.Add(encode(f, smallViT()))
	f.Add([]byte{0x3a, 0x02, 0x0a, 0x00})
	f.Add([]byte{0x42, 0x04, 0x0a, 0x00, 0x10, 0x0c})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := onnx.Decode(b)
		if err != nil {
			return
		}
		e1 := encode(t, m)
		m2, err := onnx.Decode(e1)
		if err != nil {
			t.Fatalf("re-encoded model does not decode: %v", err)
		}
		if e2 := encode(t, m2); !bytes.Equal(e1, e2) {
			t.Fatal("encode is not a fixed point")
		}
		if m.Graph != nil {
			for _, tn := range m.Graph.Initializer {
				tn.Float64s() // bounded by its data, whatever dims say
			}
		}
	})
}
