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
