//go:build !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSIMDKernelsMatchPortable checks the kernels of every SIMD table this
// CPU runs (AVX2, AVX-512, AVX-512 VNNI) against the portable ones: the
// ternary kernels bit for bit, float dots to rounding.
func TestSIMDKernelsMatchPortable(t *testing.T) {
	forSIMDKernels(t, testSIMDKernels)
}

// forSIMDKernels runs test for each SIMD kernel table this CPU runs.
func forSIMDKernels(t *testing.T, test func(*testing.T, *kernels)) {
	sets := kernelSets()[1:]
	if len(sets) == 0 {
		t.Skip("no AVX2/FMA/F16C on this CPU")
	}
	for _, kern := range sets {
		t.Run(kern.name, func(t *testing.T) { test(t, kern) })
	}
}

func testSIMDKernels(t *testing.T, kern *kernels) {
	rng := rand.New(rand.NewPCG(1, 2))
	i2 := &kern.tern[typeI2]
	for _, nb := range []int{1, 10, 27} {
		row := make([]byte, nb*tq2Block)
		for i := range row {
			row[i] = byte(rng.IntN(256))
		}
		for b := range nb { // a sane fp16 scale in each block
			row[b*tq2Block+64], row[b*tq2Block+65] = byte(rng.IntN(256)), 0x2c
		}
		a := newActs(kern, rng, 1, nb*256)
		a.quantize()
		if g, s := tq2DotGo(row, a.q, a.bsum), kern.tern[typeTQ2].blockDot(row, a.q, a.bsum); g != s {
			t.Fatalf("nb %d: portable %v, simd %v", nb, g, s)
		}
	}
	// I2 (AVX2 or AVX-512 with permuted activations), one and four tokens.
	for _, nb := range []int{1, 10, 27} {
		k := nb * 256
		row := make([]byte, nb*i2Block)
		for i := range row {
			row[i] = byte(rng.IntN(256))
		}
		a := newActs(kern, rng, 4, k)
		a.quantize()
		if i2.rows != nil {
			// 7 rows: one group of four and three single rows. Then
			// the extremes the int16 sums of the AVX2 kernel must hold:
			// every code 2 (0xaa) against ±127.
			rows := make([]byte, 7*len(row))
			for i := range rows {
				rows[i] = byte(rng.IntN(256))
			}
			for _, extreme := range []bool{false, true} {
				b := &acts{kern: kern}
				b.reset(1, k)
				copy(b.f, a.f[:k])
				b.quantize()
				if extreme {
					for i := range rows {
						rows[i] = 0xaa
					}
					sign := int8(1 - 2*(nb%2))
					for i := range b.q {
						b.q[i] = 127 * sign
					}
					if kern.i2Permuted {
						permuteI2(b.qp, b.q)
					}
					b.total[0] = int32(k) * 127 * int32(sign)
				}
				scale := make([]float32, 7)
				for r := range scale {
					scale[r] = float32(rng.Float64() + 0.01)
				}
				got := make([]float32, 7)
				i2.rows(rows, b.i2q()[:k], b.total[0], b.scale[0], scale, got)
				for r := range 7 {
					want := float32(i2DotGo(rows[r*len(row):(r+1)*len(row)], b.q[:k], b.total[0])) * scale[r] * b.scale[0]
					if got[r] != want {
						t.Fatalf("i2RowsScaled nb %d extreme %v row %d: %v, want %v", nb, extreme, r, got[r], want)
					}
				}
			}
		}
		if i2.dot4x2 != nil { // prefill's two-row kernel, then at the int16 extremes
			rows := make([]byte, 2*len(row))
			for i := range rows {
				rows[i] = byte(rng.IntN(256))
			}
			b := &acts{kern: kern}
			b.reset(4, k)
			copy(b.f, a.f)
			b.quantize()
			for _, extreme := range []bool{false, true} {
				if extreme {
					for i := range rows {
						rows[i] = 0xaa
					}
					for tk := range 4 {
						sign := int8(1 - 2*(tk%2))
						for i := range k {
							b.q[tk*k+i] = 127 * sign
						}
						b.total[tk] = int32(k) * 127 * int32(sign)
					}
				}
				var eight [8]int32
				i2.dot4x2(rows, len(row), b.q, k, b.total, &eight)
				for tk := range 4 {
					for r := range 2 {
						want := i2DotGo(rows[r*len(row):(r+1)*len(row)], b.q[tk*k:(tk+1)*k], b.total[tk])
						if eight[4*r+tk] != want {
							t.Fatalf("i2Dot4x2 nb %d extreme %v row %d token %d: %d, want %d", nb, extreme, r, tk, eight[4*r+tk], want)
						}
					}
				}
			}
		}
		var four [4]int32
		i2.dot4(row, a.i2q(), k, a.total, &four)
		for tk := range 4 {
			want := i2DotGo(row, a.q[tk*k:(tk+1)*k], a.total[tk])
			if got := i2.dot(row, a.i2q()[tk*k:(tk+1)*k], a.total[tk]); got != want || four[tk] != want {
				t.Fatalf("nb %d token %d: portable %d, simd %d, 4-token %d", nb, tk, want, got, four[tk])
			}
		}
	}
	// The int8 head: SIMD (VNNI on x+128, or AVX2 sign trick) vs plain Go;
	// k = 448 is one 256-byte step of the row loop plus three 64-byte ones.
	for _, k := range []int{40, 100, 448, 2560, 2600} {
		const rows = 9
		raw := make([]byte, 2*rows*k)
		for i := range raw {
			raw[i] = byte(rng.IntN(256)) & 0xbf
		}
		h := quantizeHead(&floatRows{raw: raw, dt: "F16", r: rows, c: k}, &arena{})
		a := newActs(kern, rng, 2, k)
		a.quantize()
		// Signed kernel first, then the VNNI one on q+128 (acts.unsigned,
		// as matmul prepares it for the head).
		for _, unsigned := range []bool{false, true} {
			if unsigned {
				a.unsigned()
			}
			out := make([]float32, 2*rows)
			h.mul(out, rows, a, 0, rows)
			for tk := range 2 {
				for r := range rows {
					want := float32(q8DotGo(h.w[r*k:(r+1)*k], a.q[tk*k:(tk+1)*k])) * h.scale[r] * a.scale[tk]
					if out[tk*rows+r] != want {
						t.Fatalf("q8 k %d unsigned %v token %d row %d: %v, want %v", k, unsigned, tk, r, out[tk*rows+r], want)
					}
				}
			}
		}
	}
	// Activation quantization: absmax and the tie-away rounding, on random
	// values and on exact ties (k+0.5, both signs) and the ±127 clamp.
	for _, nb := range []int{1, 3, 27} {
		x := quantTestValues(rng, nb*256+7)
		x[3] = 130
		if g, s := absMaxGo(x), kern.absMax(x); g != s {
			t.Fatalf("absMax nb %d: portable %v, simd %v", nb, g, s)
		}
		for _, inv := range []float32{1, 0.37, 100 / absMaxGo(x)} {
			qg, qs := make([]int8, nb*256), make([]int8, nb*256)
			bg, bs := make([]int32, nb), make([]int32, nb)
			pg, ps := make([]int8, nb*256), make([]int8, nb*256)
			quantBlocksGo(x[:nb*256], inv, qg, pg, bg)
			kern.quantBlocks(x[:nb*256], inv, qs, ps, bs)
			for i := range qg {
				if qg[i] != qs[i] || pg[i] != ps[i] {
					t.Fatalf("quantize nb %d inv %v: x[%d]=%v → portable %d (permuted %d), simd %d (%d)", nb, inv, i, x[i], qg[i], pg[i], qs[i], ps[i])
				}
			}
			for b := range bg {
				if bg[b] != bs[b] {
					t.Fatalf("block sums nb %d inv %v block %d: portable %d, simd %d", nb, inv, b, bg[b], bs[b])
				}
			}
		}
	}
	// Attention for headDim 128: scores and the weighted sum of values over
	// positions stride floats apart, against dotF32Go/axpyF32Go.
	if kern.attnScores != nil {
		checkAttention128(t, rng, kern.attnScores, kern.attnMix)
	}
	if kern.attnScores4 != nil {
		checkAttention4x128(t, rng, kern.attnScores4, kern.attnMix4)
	}
	for _, n := range []int{7, 32, 100, 2560} {
		x, y := make([]float32, n), make([]float32, n)
		h := make([]byte, 2*n)
		for i := range x {
			x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			h[2*i], h[2*i+1] = byte(rng.IntN(256)), byte(0x30+rng.IntN(16))
		}
		ya, yb := append([]float32(nil), y...), append([]float32(nil), y...)
		axpyF32Go(0.3, x, ya)
		kern.axpyF32(0.3, x, yb)
		for i := range ya {
			if abs32(ya[i]-yb[i]) > 1e-6*max(1, abs32(ya[i])) {
				t.Fatalf("axpy n %d [%d]: %v vs %v", n, i, ya[i], yb[i])
			}
		}
		if g, s := dotF32Go(x, y), kern.dotF32(x, y); abs32(g-s) > 1e-4*float32(n) {
			t.Errorf("f32 n %d: %v vs %v", n, g, s)
		}
		if g, s := dotF16Go(h, y), kern.dotF16(h, y); abs32(g-s) > 1e-3*max(1, abs32(g)) {
			t.Errorf("f16 n %d: %v vs %v", n, g, s)
		}
	}
}

// TestSoftmaxKernels: the SIMD max is exact and the SIMD exp (a float32
// polynomial) is within 2 ulp of float64 exp, sums within rounding.
func TestSoftmaxKernels(t *testing.T) { forSIMDKernels(t, testSoftmaxKernels) }

func testSoftmaxKernels(t *testing.T, kern *kernels) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 15, 16, 17, 100, 1000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Float64()*120 - 100)
		}
		x[rng.IntN(n)] = -300 // far under the clamp: e^x rounds to ~0
		if got, want := kern.maxF32(x), maxF32Go(x); got != want {
			t.Fatalf("n %d: max %v, want %v", n, got, want)
		}
		mx := maxF32Go(x)
		simd, ref := slices.Clone(x), slices.Clone(x)
		sum, refSum := kern.expSubSum(simd, mx), expSubSumGo(ref, mx)
		for i := range x {
			if d := math.Abs(float64(simd[i] - ref[i])); d > 2.5e-7*float64(ref[i]) && d > 1e-37 {
				t.Fatalf("n %d: exp(%v) = %v, want %v", n, x[i]-mx, simd[i], ref[i])
			}
		}
		if d := math.Abs(float64(sum - refSum)); d > 1e-6*float64(refSum) {
			t.Fatalf("n %d: sum %v, want %v", n, sum, refSum)
		}
	}
}

// TestRMSNormKernels: the SIMD sum of squares agrees with the float64 loop
// to rounding, and the scaling pass is bit for bit.
func TestRMSNormKernels(t *testing.T) { forSIMDKernels(t, testRMSNormKernels) }

func testRMSNormKernels(t *testing.T, kern *kernels) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 15, 16, 33, 2560, 6912} {
		x, w := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], w[i] = float32(rng.NormFloat64()*3), float32(rng.NormFloat64())
		}
		if got, want := kern.sumSquares(x), sumSquaresGo(x); math.Abs(got-want) > 1e-12*want {
			t.Fatalf("n %d: Σx² %v, want %v", n, got, want)
		}
		got, want := make([]float32, n), make([]float32, n)
		kern.scaleMul(got, x, w, 0.37)
		scaleMulGo(want, x, w, 0.37)
		if !slices.Equal(got, want) {
			t.Fatalf("n %d: scaleMul differs", n)
		}
	}
}

// TestRelu2MulKernel checks BitNet's gate against the portable loop bit
// for bit, including NaN, ±0 and ±Inf.
func TestRelu2MulKernel(t *testing.T) { forSIMDKernels(t, testRelu2MulKernel) }

func testRelu2MulKernel(t *testing.T, kern *kernels) {
	rng := rand.New(rand.NewPCG(11, 12))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -1e-30, 1e-30}
	for _, n := range []int{1, 15, 16, 33, 6912} {
		g, u := make([]float32, n), make([]float32, n)
		for i := range g {
			g[i], u[i] = float32(rng.NormFloat64()*3), float32(rng.NormFloat64())
			if i < len(special) {
				g[i] = special[i]
			}
		}
		got, want := slices.Clone(g), slices.Clone(g)
		kern.relu2Mul(got, u)
		relu2MulGo(want, u)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n %d, g[%d] = %v: %v, want %v", n, i, g[i], got[i], want[i])
			}
		}
	}
}

// TestKernelsUseOnlyVEX: a legacy-SSE instruction on an X register inside
// the AVX kernels (MOVD AX, X15 rather than VMOVD) cost ~120 ns per call
// on the 2-core Zen 3 VM — an SSE/AVX state transition — which made the
// per-row I2 kernel 3× slower than its loop. The assembler encodes
// whatever it is given, so the files are checked here.
func TestKernelsUseOnlyVEX(t *testing.T) {
	reg := regexp.MustCompile(`\b[XYZ]([0-9]|[12][0-9]|3[01])\b`)
	files, err := filepath.Glob("*_amd64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no amd64 assembly files found (%v)", err)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			code, _, _ := strings.Cut(line, "//")
			for _, ins := range strings.Split(code, ";") {
				f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(ins), `\`))
				if len(f) < 2 || strings.HasPrefix(f[0], "V") || strings.HasPrefix(f[0], "#") || strings.HasSuffix(f[0], ":") || strings.Contains(f[0], "(") {
					continue
				}
				if reg.MatchString(strings.Join(f[1:], " ")) {
					t.Errorf("%s:%d: %s is legacy SSE; use its VEX form (V%s)", file, i+1, strings.TrimSpace(ins), f[0])
				}
			}
		}
	}
}
