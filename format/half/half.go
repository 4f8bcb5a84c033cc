// Package half converts between float32 and the 16-bit float formats that
// checkpoints store: IEEE binary16 (F16) and bfloat16 (BF16). Both float32→16
// conversions round to nearest, ties to even, which is what PyTorch, numpy
// and ggml's fp32→fp16 (F16C) do; llama.cpp's quantizers depend on it.
package half

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// F16ToF32 widens an IEEE binary16 value.
func F16ToF32(h uint16) float32 { return float16.Frombits(h).Float32() }

// F32ToF16 narrows with round-to-nearest-even; overflow becomes ±Inf.
func F32ToF16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// BF16ToF32 widens a bfloat16 value (exact).
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F32ToBF16 narrows with round-to-nearest-even; NaN stays a quiet NaN.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep sign, force a mantissa bit
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// DecodeF16 widens len(dst) little-endian F16 values from src.
func DecodeF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// DecodeBF16 widens len(dst) little-endian BF16 values from src.
func DecodeBF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
}

// EncodeF16 writes src as little-endian F16 into dst (2·len(src) bytes).
func EncodeF16(dst []byte, src []float32) {
	for i, f := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(f))
	}
}

// EncodeBF16 writes src as little-endian BF16 into dst (2·len(src) bytes).
func EncodeBF16(dst []byte, src []float32) {
	for i, f := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(f))
	}
}
