//go:build !purego

package cpu

import (
	"math/rand/v2"
	"testing"
)

// TestSIMDKernelsMatchPortable checks the AVX2 kernels against the portable
// ones: the ternary kernel bit for bit, float dots to rounding.
func TestSIMDKernelsMatchPortable(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2/FMA/F16C on this CPU")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nb := range []int{1, 10, 27} {
		row := make([]byte, nb*tq2Block)
		for i := range row {
			row[i] = byte(rng.IntN(256))
		}
		for b := range nb { // a sane fp16 scale in each block
			row[b*tq2Block+64], row[b*tq2Block+65] = byte(rng.IntN(256)), 0x2c
		}
		a := &acts{}
		a.reset(1, nb*256)
		for i := range a.f {
			a.f[i] = float32(rng.NormFloat64())
		}
		a.quantize()
		if g, s := tq2DotGo(row, a.q, a.bsum), tq2DotAVX2(row, a.q, a.bsum); g != s {
			t.Fatalf("nb %d: portable %v, avx2 %v", nb, g, s)
		}
	}
	// I2 (AVX2 or AVX-512 with permuted activations), one and four tokens.
	for _, nb := range []int{1, 10, 27} {
		k := nb * 256
		row := make([]byte, nb*i2Block)
		for i := range row {
			row[i] = byte(rng.IntN(256))
		}
		a := &acts{}
		a.reset(4, k)
		for i := range a.f {
			a.f[i] = float32(rng.NormFloat64())
		}
		a.quantize()
		if i2Rows != nil {
			rows := make([]byte, 3*len(row))
			for i := range rows {
				rows[i] = byte(rng.IntN(256))
			}
			out := make([]int32, 3)
			i2Rows(rows, a.i2q()[:k], out)
			for r := range 3 {
				if want := i2DotGo(rows[r*len(row):(r+1)*len(row)], a.q[:k], 0); out[r] != want {
					t.Fatalf("i2Rows nb %d row %d: %d, want %d", nb, r, out[r], want)
				}
			}
		}
		var four [4]int32
		i2Dot4(row, a.i2q(), k, a.total, &four)
		for tk := range 4 {
			want := i2DotGo(row, a.q[tk*k:(tk+1)*k], a.total[tk])
			if got := i2Dot(row, a.i2q()[tk*k:(tk+1)*k], a.total[tk]); got != want || four[tk] != want {
				t.Fatalf("%s nb %d token %d: portable %d, simd %d, 4-token %d", kernelName, nb, tk, want, got, four[tk])
			}
		}
	}
	// The int8 head: SIMD (VNNI on x+128, or AVX2 sign trick) vs plain Go.
	for _, k := range []int{40, 100, 2560, 2600} {
		const rows = 9
		raw := make([]byte, 2*rows*k)
		for i := range raw {
			raw[i] = byte(rng.IntN(256)) & 0xbf
		}
		h := quantizeHead(&floatRows{raw: raw, dt: "F16", r: rows, c: k}, &arena{})
		a := &acts{}
		a.reset(2, k)
		for i := range a.f {
			a.f[i] = float32(rng.NormFloat64())
		}
		a.quantize()
		out := make([]float32, 2*rows)
		h.mul(out, rows, a, 0, rows)
		for tk := range 2 {
			for r := range rows {
				want := float32(q8DotGo(h.w[r*k:(r+1)*k], a.q[tk*k:(tk+1)*k])) * h.scale[r] * a.scale[tk]
				if out[tk*rows+r] != want {
					t.Fatalf("q8 k %d token %d row %d: %v, want %v", k, tk, r, out[tk*rows+r], want)
				}
			}
		}
	}
	for _, n := range []int{7, 32, 100, 2560} {
		x, y := make([]float32, n), make([]float32, n)
		h := make([]byte, 2*n)
		for i := range x {
			x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			h[2*i], h[2*i+1] = byte(rng.IntN(256)), byte(0x30+rng.IntN(16))
		}
		if g, s := dotF32Go(x, y), dotF32(x, y); abs32(g-s) > 1e-4*float32(n) {
			t.Errorf("f32 n %d: %v vs %v", n, g, s)
		}
		if g, s := dotF16Go(h, y), dotF16(h, y); abs32(g-s) > 1e-3*max(1, abs32(g)) {
			t.Errorf("f16 n %d: %v vs %v", n, g, s)
		}
	}
}
