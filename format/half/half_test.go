package half

import (
	"math"
	"testing"
)

func TestF16RoundsToNearestEven(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3C00}, {-2, 0xC000}, {65504, 0x7BFF}, {65520, 0x7C00}, // 65520 rounds up to +Inf
		{float32(math.Inf(-1)), 0xFC00}, {5.960464477539063e-08, 0x0001}, // smallest subnormal
		// 1 + 2^-11 is halfway between 1 and 1+2^-10: ties to even (1.0).
		{1 + 1.0/2048, 0x3C00},
		// 1 + 3·2^-11 is halfway between 1+2^-10 and 1+2^-9: ties to even (0x3C02).
		{1 + 3.0/2048, 0x3C02},
	}
	for _, c := range cases {
		if got := F32ToF16(c.in); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if F16ToF32(0x3C00) != 1 || F16ToF32(0x0001) != 5.960464477539063e-08 {
		t.Fatal("F16ToF32")
	}
}

func TestBF16RoundsToNearestEven(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3F800000, 0x3F80},        // 1.0
		{0x3F808000, 0x3F80},        // halfway, even stays
		{0x3F818000, 0x3F82},        // halfway, odd rounds up
		{0x3F808001, 0x3F81},        // above halfway
		{0x7F7FFFFF, 0x7F80},        // max float rounds to +Inf
		{0x7FC00001, 0x7FC0},        // NaN stays NaN
		{0x7F800001, 0x7F80 | 0x40}, // signalling NaN becomes quiet, not Inf
	} {
		if got := F32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if BF16ToF32(0x3F80) != 1 {
		t.Fatal("BF16ToF32")
	}
	buf := make([]byte, 4)
	EncodeBF16(buf, []float32{1, -2})
	out := make([]float32, 2)
	DecodeBF16(out, buf)
	if out[0] != 1 || out[1] != -2 {
		t.Fatal(out)
	}
}
