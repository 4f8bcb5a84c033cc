package cpu

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestSiluMulMatchesPortable checks every table's SwiGLU gate against the
// portable loop. The SIMD ones take e^−x from the float32 polynomial
// (≈1 ulp), so each result is within a few ulps of the portable
// float64-exp one, also at ±0 and where e^−x underflows; past −88, where
// float32 e^−x overflows, the portable gate is −0 and the clamped SIMD
// one below 1e-35 in magnitude. Activations are finite (an infinite gate
// gives NaN or ±Inf: the model is broken either way).
func TestSiluMulMatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	special := []float32{0, float32(math.Copysign(0, -1)), 87, 88, 89, -87, -88, -89, -100, 100, 1e-30, -1e-30}
	for _, kern := range kernelSets() {
		t.Run(kern.name, func(t *testing.T) {
			simd := kern.name != "go"
			if simd && reflect.ValueOf(kern.siluMul).Pointer() == reflect.ValueOf(siluMulGo).Pointer() {
				t.Errorf("the %s table runs the portable siluMul", kern.name)
			}
			for _, n := range []int{1, 7, 8, 9, 16, 33, 100, 255, 257, 4096, 4864} {
				g, u := make([]float32, n), make([]float32, n)
				for i := range g {
					g[i], u[i] = float32(rng.NormFloat64()*4), float32(rng.NormFloat64())
				}
				for i := range min(n, len(special)) {
					g[i] = special[i]
				}
				got, want := slices.Clone(g), slices.Clone(g)
				kern.siluMul(got, u)
				siluMulGo(want, u)
				for i := range got {
					d := math.Abs(float64(got[i] - want[i]))
					if got[i] != want[i] && !(d <= 4*ulp32(want[i])) && !(d < 1e-35) {
						t.Fatalf("n %d: silu(%v)·%v = %v, want %v", n, g[i], u[i], got[i], want[i])
					}
				}
			}
		})
	}
}

// ulp32 is the spacing of float32 values at |x|.
func ulp32(x float32) float64 {
	a := math.Abs(float64(x))
	return float64(math.Nextafter32(float32(a), float32(math.Inf(1)))) - a
}
