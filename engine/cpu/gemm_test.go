package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/format/half"
)

// gemmShapes are rows × k × tokens, out stride: whole panels and vectors,
// K with a remainder past the vector width (and below it), rows not a
// multiple of the four-row panel (and fewer than four), token counts off
// every block size, ldo > rows, and K passes (n·k·4 bytes past
// gemmL2Acts; k past gemmGoK).
var gemmShapes = []struct{ rows, k, n, ldo int }{
	{4, 16, 6, 4}, {8, 64, 2, 8}, {16, 128, 64, 16}, {4, 32, 1, 4},
	{5, 17, 7, 9}, {13, 300, 11, 20}, {3, 24, 5, 3}, {8, 7, 5, 8},
	{12, 520, 3, 70}, {20, 2100, 64, 24}, {7, 1029, 13, 7},
}

// gemmCase is one shape's random weights in every dtype (F16 and BF16 the
// rounded F32 values, so all three share the exact widened weights wf)
// and tokens.
type gemmCase struct {
	rows, k, n, ldo int
	w32             []float32
	w16, wb16       []byte
	f16, bf16       []float32 // the widened F16 and BF16 weights
	x               []float32
}

func newGemmCase(rng *rand.Rand, rows, k, n, ldo int) *gemmCase {
	c := &gemmCase{rows: rows, k: k, n: n, ldo: ldo}
	c.w32 = make([]float32, rows*k)
	c.w16, c.wb16 = make([]byte, 2*rows*k), make([]byte, 2*rows*k)
	c.f16, c.bf16 = make([]float32, rows*k), make([]float32, rows*k)
	for i := range c.w32 {
		v := float32(rng.NormFloat64() * 0.1)
		c.w32[i] = v
		h := half.F32ToF16(v)
		c.w16[2*i], c.w16[2*i+1] = byte(h), byte(h>>8)
		c.f16[i] = half.F16ToF32(h)
		b := uint16(math.Float32bits(v) >> 16) // truncation: any bf16 will do
		c.wb16[2*i], c.wb16[2*i+1] = byte(b), byte(b>>8)
		c.bf16[i] = math.Float32frombits(uint32(b) << 16)
	}
	c.x = make([]float32, n*k)
	for i := range c.x {
		c.x[i] = float32(rng.NormFloat64())
	}
	return c
}

// run calls one dtype's kernel into an out buffer whose entries outside
// the product hold a sentinel (NaN) and inside it garbage, which the
// kernel must overwrite.
func (c *gemmCase) run(g floatGemm, dt string) []float32 {
	out := make([]float32, (c.n-1)*c.ldo+c.rows+3)
	for i := range out {
		out[i] = float32(math.NaN())
	}
	for t := range c.n {
		for r := range c.rows {
			out[t*c.ldo+r] = 1e30
		}
	}
	switch dt {
	case "F32":
		g.f32(c.w32, c.k, c.x, c.n, out, c.ldo)
	case "F16":
		g.f16(c.w16, c.k, c.x, c.n, out, c.ldo)
	case "BF16":
		g.bf16(c.wb16, c.k, c.x, c.n, out, c.ldo)
	}
	return out
}

// ref returns the float64 products and Σ|w·x| of (row, token), the scale
// of the rounding error.
func (c *gemmCase) ref(dt string, r, t int) (dot, mag float64) {
	w := map[string][]float32{"F32": c.w32, "F16": c.f16, "BF16": c.bf16}[dt][r*c.k : (r+1)*c.k]
	for j, v := range w {
		p := float64(v) * float64(c.x[t*c.k+j])
		dot += p
		mag += math.Abs(p)
	}
	return dot, mag
}

// check compares out with the float64 reference: every entry within
// slack·(k+4)·2⁻²⁴·Σ|w·x| of it (the bound on float32 dot products
// summed in any order, a pass's partial sums included: slack 1 for one
// kernel against exact, 2 for two kernels against each other), and the
// sentinels outside the product untouched.
func (c *gemmCase) check(t *testing.T, name string, out []float32, dt string, slack float64) {
	t.Helper()
	bad := 0
	for tk := range c.n {
		for r := range c.ldo {
			i := tk*c.ldo + r
			if r >= c.rows {
				if i < len(out) && !math.IsNaN(float64(out[i])) {
					t.Errorf("%s: out[%d] (token %d, past the rows) written: %v", name, i, tk, out[i])
					return
				}
				continue
			}
			want, mag := c.ref(dt, r, tk)
			tol := slack*float64(c.k+4)*0x1p-24*mag + 1e-30
			if d := math.Abs(float64(out[i]) - want); !(d <= tol) {
				if bad++; bad <= 3 {
					t.Errorf("%s: row %d token %d: %v, want %v (±%.3g)", name, r, tk, out[i], want, tol)
				}
			}
		}
	}
	for _, v := range out[(c.n-1)*c.ldo+c.rows:] {
		if !math.IsNaN(float64(v)) {
			t.Errorf("%s: wrote past the last token's rows", name)
			return
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d products off", name, bad)
	}
}

var gemmDtypes = []string{"F32", "F16", "BF16"}

// TestGemmGoMatchesFloat64 holds the portable kernels to the float64
// products of the same (widened) weights.
func TestGemmGoMatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 1))
	for _, s := range gemmShapes {
		c := newGemmCase(rng, s.rows, s.k, s.n, s.ldo)
		for _, dt := range gemmDtypes {
			c.check(t, fmt.Sprintf("go %s %d×%d×%d", dt, s.rows, s.k, s.n), c.run(portableGemm, dt), dt, 1)
		}
	}
}

// TestGemmKernelsMatchPortable compares every table's gemm kernels with
// the portable ones: each within the float64 bound, and the two within
// twice that of each other.
func TestGemmKernelsMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 2))
	for _, kern := range kernelSets() {
		t.Logf("table %s", kern.name)
		for _, s := range gemmShapes {
			c := newGemmCase(rng, s.rows, s.k, s.n, s.ldo)
			for _, dt := range gemmDtypes {
				name := fmt.Sprintf("%s %s %d×%d×%d", kern.name, dt, s.rows, s.k, s.n)
				got, want := c.run(kern.gemm, dt), c.run(portableGemm, dt)
				c.check(t, name, got, dt, 1)
				for tk := range c.n {
					for r := range c.rows {
						_, mag := c.ref(dt, r, tk)
						i := tk*c.ldo + r
						if d := math.Abs(float64(got[i] - want[i])); d > 2*float64(c.k+4)*0x1p-24*mag {
							t.Fatalf("%s: row %d token %d: %v, portable %v", name, r, tk, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
