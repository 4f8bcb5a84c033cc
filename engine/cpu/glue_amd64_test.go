//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

// TestGlueAVX2MatchPortable checks the AVX2 glue kernels directly against
// the portable versions, and that the AVX2 table holds them (the other
// kernel tests then check them through it too).
func TestGlueAVX2MatchPortable(t *testing.T) {
	if !detectFeatures().avx2 {
		t.Skip("no AVX2/FMA/F16C on this CPU")
	}
	k := newKernels(cpuFeatures{avx2: true})
	for _, f := range [][2]any{{k.absMax, absMaxGlueAVX2}, {k.quantBlocks, quantBlocksGlueAVX2}, {k.relu2Mul, relu2MulGlueAVX2},
		{k.sumSquares, sumSquaresGlueAVX2}, {k.scaleMul, scaleMulGlueAVX2}, {k.maxF32, maxF32GlueAVX2}, {k.expSubSum, expSubSumGlueAVX2},
		{k.attnScores, attnScoresGlueAVX2}, {k.attnMix, attnMixGlueAVX2}, {k.attnScores4, attnScores4GlueAVX2}, {k.attnMix4, attnMix4GlueAVX2},
		{k.siluMul, siluMulGlueAVX2}} {
		if reflect.ValueOf(f[0]).Pointer() != reflect.ValueOf(f[1]).Pointer() {
			t.Errorf("%s is not in the avx2 table", runtime.FuncForPC(reflect.ValueOf(f[1]).Pointer()).Name())
		}
	}
	rng := rand.New(rand.NewPCG(21, 22))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -1e-30, 1e-30}
	for _, n := range []int{1, 7, 8, 9, 15, 16, 24, 33, 40, 100, 2560, 6912} {
		x, w := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], w[i] = float32(rng.NormFloat64()*3), float32(rng.NormFloat64())
		}
		if g, s := absMaxGo(x), absMaxGlueAVX2(x); g != s {
			t.Fatalf("absMax n %d: %v, want %v", n, s, g)
		}
		if g, s := maxF32Go(x), maxF32GlueAVX2(x); g != s {
			t.Fatalf("max n %d: %v, want %v", n, s, g)
		}
		if got, want := sumSquaresGlueAVX2(x), sumSquaresGo(x); math.Abs(got-want) > 1e-12*want {
			t.Fatalf("sumSquares n %d: %v, want %v", n, got, want)
		}
		got, want := make([]float32, n), make([]float32, n)
		scaleMulGlueAVX2(got, x, w, 0.37)
		scaleMulGo(want, x, w, 0.37)
		if !slices.Equal(got, want) {
			t.Fatalf("scaleMul n %d differs", n)
		}
		inPlace := slices.Clone(x)
		scaleMulGlueAVX2(inPlace, inPlace, w, 0.37)
		if !slices.Equal(inPlace, want) {
			t.Fatalf("scaleMul in place n %d differs", n)
		}
		g := slices.Clone(x)
		for i := range min(n, len(special)) {
			g[i] = special[i]
		}
		got, want = slices.Clone(g), slices.Clone(g)
		relu2MulGlueAVX2(got, w)
		relu2MulGo(want, w)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("relu2Mul n %d, g[%d] = %v: %v, want %v", n, i, g[i], got[i], want[i])
			}
		}
		// Softmax numerators, including an argument far under the clamp.
		e := make([]float32, n)
		for i := range e {
			e[i] = float32(rng.Float64()*120 - 100)
		}
		e[rng.IntN(n)] = -300
		mx := maxF32Go(e)
		simd, ref := slices.Clone(e), slices.Clone(e)
		sum, refSum := expSubSumGlueAVX2(simd, mx), expSubSumGo(ref, mx)
		for i := range e {
			if d := math.Abs(float64(simd[i] - ref[i])); d > 2.5e-7*float64(ref[i]) && d > 1e-37 {
				t.Fatalf("exp n %d: exp(%v) = %v, want %v", n, e[i]-mx, simd[i], ref[i])
			}
		}
		if d := math.Abs(float64(sum - refSum)); d > 1e-6*float64(refSum) {
			t.Fatalf("expSubSum n %d: sum %v, want %v", n, sum, refSum)
		}
	}
	// exp over its whole range, 2^n from −126 up: relative error.
	xs := make([]float32, 0, 4096)
	for v := float32(-87); v <= 0; v += 87.0 / 4000 {
		xs = append(xs, v)
	}
	xs = xs[:len(xs)&^7]
	ref := slices.Clone(xs)
	expSubSumGo(ref, 0)
	expSubSumGlueAVX2(xs, 0)
	for i := range xs {
		if d := math.Abs(float64(xs[i]-ref[i])) / float64(ref[i]); d > 2.5e-7 {
			t.Fatalf("exp(%v) = %v, want %v (rel %.2g)", -87+float64(i)*87/4000, xs[i], ref[i], d)
		}
	}
	// Quantization: random values, exact ties of both signs, the clamp,
	// and a short last block.
	for _, nb := range []int{1, 3, 27} {
		x := quantTestValues(rng, nb*256+7)
		x[3], x[9] = 130, -200
		for _, inv := range []float32{1, 0.37, 100 / absMaxGo(x), 127 / absMaxGo(x)} {
			for _, withTail := range []bool{false, true} {
				xx := x[:nb*256]
				nbs := nb
				if withTail {
					xx, nbs = x, nb+1
				}
				qg, qs := make([]int8, len(xx)), make([]int8, len(xx))
				bg, bs := make([]int32, nbs), make([]int32, nbs)
				pg, ps := make([]int8, len(xx)), make([]int8, len(xx))
				quantBlocksGo(xx, inv, qg, pg, bg)
				quantBlocksGlueAVX2(xx, inv, qs, ps, bs)
				for i := range qg {
					if qg[i] != qs[i] || pg[i] != ps[i] {
						t.Fatalf("quantize nb %d inv %v: x[%d]=%v → portable %d (permuted %d), avx2 %d (%d)", nb, inv, i, xx[i], qg[i], pg[i], qs[i], ps[i])
					}
				}
				if !slices.Equal(bg, bs) {
					t.Fatalf("block sums nb %d inv %v: portable %v, avx2 %v", nb, inv, bg, bs)
				}
			}
		}
	}
	checkAttention128(t, rng, attnScoresGlueAVX2, attnMixGlueAVX2)
	checkAttention4x128(t, rng, attnScores4GlueAVX2, attnMix4GlueAVX2)
}

// checkAttention4x128 checks four-head attention kernels against one head
// at a time in portable Go.
func checkAttention4x128(t *testing.T, rng *rand.Rand,
	scores4 func(q, k []float32, stride, n int, scale float32, out []float32, ldo int),
	mix4 func(w []float32, ldw int, v []float32, stride, n int, o []float32)) {
	t.Helper()
	const stride = 640
	for _, n := range []int{0, 1, 3, 4, 5, 8, 130} {
		q := make([]float32, 4*128)
		kv := make([]float32, max(n, 1)*stride)
		for i := range q {
			q[i] = float32(rng.NormFloat64())
		}
		for i := range kv {
			kv[i] = float32(rng.NormFloat64())
		}
		off := 128
		ldo := n + 3
		got := make([]float32, 4*ldo)
		for i := range got {
			got[i] = 7
		}
		scores4(q, kv[off:], stride, n, 0.088, got, ldo)
		for h := range 4 {
			for p := range n {
				want := dotF32Go(q[h*128:(h+1)*128], kv[off+p*stride:off+p*stride+128]) * 0.088
				if g := got[h*ldo+p]; abs32(g-want) > 1e-5*max(1, abs32(want)) {
					t.Fatalf("attnScores4 n %d head %d pos %d: %v, want %v", n, h, p, g, want)
				}
			}
			for p := n; p < ldo; p++ {
				if got[h*ldo+p] != 7 {
					t.Fatalf("attnScores4 n %d head %d wrote past n", n, h)
				}
			}
		}
		w := make([]float32, 4*ldo)
		for i := range w {
			w[i] = float32(rng.Float64())
		}
		o := make([]float32, 4*128)
		for i := range o {
			o[i] = 7 // must be overwritten
		}
		mix4(w, ldo, kv[off:], stride, n, o)
		for h := range 4 {
			ref := make([]float32, 128)
			for p := range n {
				axpyF32Go(w[h*ldo+p], kv[off+p*stride:off+p*stride+128], ref)
			}
			for i := range ref {
				if g := o[h*128+i]; abs32(g-ref[i]) > 1e-5*max(1, abs32(ref[i])) {
					t.Fatalf("attnMix4 n %d head %d [%d]: %v, want %v", n, h, i, g, ref[i])
				}
			}
		}
	}
}

// BenchmarkGlueAVX2 compares each portable glue kernel with its AVX2
// version at BitNet-2B's sizes (2560 hidden, 6912 FFN); attention at 512
// positions (one span).
func BenchmarkGlueAVX2(b *testing.B) {
	if !detectFeatures().avx2 {
		b.Skip("no AVX2/FMA/F16C on this CPU")
	}
	kern := newKernels(cpuFeatures{avx2: true})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2560, 6912} {
		x, w, dst := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], w[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		e := make([]float32, n)
		q := make([]int8, n)
		bsum := make([]int32, n/256)
		nq := n / 256 * 256
		type k struct {
			name    string
			go_, v2 func()
		}
		var sink float64
		kernels := []k{
			{"absMax", func() { sink += float64(absMaxGo(x)) }, func() { sink += float64(absMaxGlueAVX2(x)) }},
			{"maxF32", func() { sink += float64(maxF32Go(x)) }, func() { sink += float64(maxF32GlueAVX2(x)) }},
			{"quantBlocks", func() { quantBlocksGo(x[:nq], 40, q, nil, bsum) }, func() { quantBlocksGlueAVX2(x[:nq], 40, q, nil, bsum) }},
			{"relu2Mul", func() { copy(e, x); relu2MulGo(e, w) }, func() { copy(e, x); relu2MulGlueAVX2(e, w) }},
			{"sumSquares", func() { sink += sumSquaresGo(x) }, func() { sink += sumSquaresGlueAVX2(x) }},
			{"scaleMul", func() { scaleMulGo(dst, x, w, 0.37) }, func() { scaleMulGlueAVX2(dst, x, w, 0.37) }},
			{"expSubSum", func() { copy(e, x); sink += float64(expSubSumGo(e, 3)) }, func() { copy(e, x); sink += float64(expSubSumGlueAVX2(e, 3)) }},
		}
		for _, kk := range kernels {
			b.Run(fmt.Sprintf("%s/n=%d/go", kk.name, n), func(b *testing.B) {
				for range b.N {
					kk.go_()
				}
			})
			b.Run(fmt.Sprintf("%s/n=%d/avx2", kk.name, n), func(b *testing.B) {
				for range b.N {
					kk.v2()
				}
			})
		}
		_ = sink
	}
	const pos = 512
	qv := make([]float32, 4*128)
	kv := make([]float32, pos*128)
	vv := make([]float32, pos*128)
	for i := range kv {
		kv[i], vv[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	for i := range qv {
		qv[i] = float32(rng.NormFloat64())
	}
	sc := make([]float32, 4*pos)
	o := make([]float32, 4*128)
	b.Run("attnHead/n=512/go", func(b *testing.B) {
		for range b.N {
			for p := range pos {
				sc[p] = kern.dotF32(qv[:128], kv[p*128:(p+1)*128]) * 0.088
			}
			clear(o[:128])
			for p := range pos {
				kern.axpyF32(sc[p], vv[p*128:(p+1)*128], o[:128])
			}
		}
	})
	b.Run("attnHead/n=512/avx2", func(b *testing.B) {
		for range b.N {
			attnScoresGlueAVX2(qv, kv, 128, pos, 0.088, sc)
			attnMixGlueAVX2(sc, vv, 128, pos, o)
		}
	})
	b.Run("attnGroup4/n=512/avx2x4", func(b *testing.B) {
		for range b.N {
			for h := range 4 {
				attnScoresGlueAVX2(qv[h*128:], kv, 128, pos, 0.088, sc[h*pos:])
				attnMixGlueAVX2(sc[h*pos:], vv, 128, pos, o[h*128:])
			}
		}
	})
	b.Run("attnGroup4/n=512/avx2", func(b *testing.B) {
		for range b.N {
			attnScores4GlueAVX2(qv, kv, 128, pos, 0.088, sc, pos)
			attnMix4GlueAVX2(sc, pos, vv, 128, pos, o)
		}
	})
}
