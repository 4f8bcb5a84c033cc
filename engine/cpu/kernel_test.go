package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/quant"
	"github.com/edgectl/edgectl/sherry"
)

// TestTernaryKernelsExact checks every packed kernel against the
// dequantized float reference on the same int8 activations: weights
// decoded by the packers' own unpack functions, products summed in float64
// per block (exact: integers times one fp16 scale), then combined in the
// same order. The results must be bit-identical, not merely close; with
// every kernel table this CPU runs.
func TestTernaryKernelsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, k, n = 37, 768, 3
	x := newActs(nil, rng, n, k).f
	x[5] = 40 // one outlier, as real activations have

	// Random ternary rows with random per-256-block scales (TQ) or per-row
	// scales (.h1b); Sherry rows keep one zero per group of 4.
	w := make([][]float32, rows)
	for r := range w {
		w[r] = make([]float32, k)
		for b := 0; b < k; b += 256 {
			d := float32(rng.Float64() + 0.01)
			for i := b; i < b+256; i += 4 {
				zp := rng.IntN(4)
				for p := range 4 {
					v := float32(rng.IntN(3) - 1)
					if p == zp {
						v = 0
					} else if v == 0 {
						v = 1
					}
					w[r][i+p] = v * d
				}
			}
		}
	}
	for _, kern := range kernelSets() {
		a := &acts{kern: kern}
		a.reset(n, k)
		copy(a.f, x)
		a.quantize()
		for _, kind := range []string{"TQ2_0", "TQ1_0", "halo2", "tq1h", "sherry"} {
			t.Run(kern.name+"/"+kind, func(t *testing.T) { checkTernaryExact(t, a, kind, w, rows, rng) })
		}
	}
}

// checkTernaryExact is TestTernaryKernelsExact for one packing: rows of w
// packed as kind, multiplied with a.
func checkTernaryExact(t *testing.T, a *acts, kind string, w [][]float32, rows int, rng *rand.Rand) {
	k, n := a.k, a.n
	rb := rowBytesFor(kind, k)
	data := make([]byte, rows*rb)
	scales := make([]float32, rows)
	deq := make([][]float32, rows) // the reference's view of the weights
	q := make([]int8, k)
	for r := range rows {
		dst := data[r*rb : (r+1)*rb]
		deq[r] = make([]float32, k)
		switch kind {
		case "TQ2_0":
			must(t, quant.QuantizeRowTQ2_0(dst, w[r]))
			quant.DequantizeRowTQ2_0(deq[r], dst)
		case "TQ1_0":
			must(t, quant.QuantizeRowTQ1_0(dst, w[r]))
			quant.DequantizeRowTQ1_0(deq[r], dst)
		default:
			for i, v := range w[r] {
				q[i] = int8(sign(v))
			}
			switch kind {
			case "halo2":
				quant.PackRowHALO2(dst, q)
				quant.UnpackRowHALO2(q, dst)
			case "tq1h":
				quant.PackRowTQ1H(dst, q)
				quant.UnpackRowTQ1H(q, dst)
			case "sherry":
				must(t, sherry.PackRow(dst, w[r]))
				sherry.UnpackRow(q, dst)
			}
			for i, v := range q {
				deq[r][i] = float32(v)
			}
			scales[r] = float32(rng.Float64())
		}
	}
	var l *ternLinear
	if kind == "TQ2_0" || kind == "TQ1_0" {
		l = newTernary(kind, data, rows, k, nil)
	} else {
		l = newTernary(kind, data, rows, k, scales)
	}
	got := make([]float32, n*rows)
	l.mul(got, rows, a, 0, rows)
	for tk := range n {
		x := a.q[tk*k : (tk+1)*k]
		for r := range rows {
			var want float32
			if l.rowScale == nil {
				for b := 0; b < k; b += 256 {
					var s float64
					for i := b; i < b+256; i++ {
						s += float64(deq[r][i]) * float64(x[i])
					}
					want += float32(s)
				}
			} else {
				var s float64
				for i := range k {
					s += float64(deq[r][i]) * float64(x[i])
				}
				want = float32(s) * scales[r]
			}
			want *= a.scale[tk]
			if got[tk*rows+r] != want {
				t.Fatalf("token %d row %d: kernel %v, reference %v", tk, r, got[tk*rows+r], want)
			}
		}
	}
}

func sign(v float32) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRepackedKernelsExact: every packing whose rows carry one scale is
// repacked to I2 at load; the I2 kernel must give the exact product of the
// dequantized weights and the int8 activations (a float64 sum of integer
// multiples of one scale is exact), rounded once. 19 rows stay plain I2;
// 20 rows are interleaved (I2x4) where the kernels for it exist, and their
// products are checked over whole and partial row ranges (a range not on
// a group boundary takes the portable path). With every kernel table this
// CPU runs.
func TestRepackedKernelsExact(t *testing.T) {
	for _, kern := range kernelSets() {
		for _, rows := range []int{19, 20, 71, 72} { // 71, 72: two 32-row prefill tiles and a rest (plain I2 pairs, I2x4 groups)
			testRepackedKernelsExact(t, kern, rows)
		}
	}
}

func testRepackedKernelsExact(t *testing.T, kern *kernels, rows int) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k, n = 512, 6                                  // 6 tokens: the 4-token prefill kernel and the remainder
	a, a1 := newActs(kern, rng, n, k), &acts{kern: kern} // prefill (6 tokens) and decode (1)
	a.quantize()
	a1.reset(1, k)
	copy(a1.f, a.f)
	a1.quantize()
	mem := &arena{}
	defer mem.Close()
	for _, kind := range []string{"TQ2_0", "TQ1_0", "halo2", "tq1h", "sherry"} {
		rb := rowBytesFor(kind, k)
		data := make([]byte, rows*rb)
		scales := make([]float32, rows)
		deq := make([][]float64, rows)
		w, q := make([]float32, k), make([]int8, k)
		for r := range rows {
			d := float32(rng.Float64() + 0.01) // one scale per row
			for i := 0; i < k; i += 4 {
				zp := rng.IntN(4)
				for p := range 4 {
					v := float32(rng.IntN(3) - 1)
					if p == zp {
						v = 0
					} else if v == 0 {
						v = -1
					}
					w[i+p] = v * d
					q[i+p] = int8(v)
				}
			}
			dst := data[r*rb : (r+1)*rb]
			deq[r] = make([]float64, k)
			f := make([]float32, k)
			switch kind {
			case "TQ2_0":
				must(t, quant.QuantizeRowTQ2_0(dst, w))
				quant.DequantizeRowTQ2_0(f, dst)
			case "TQ1_0":
				must(t, quant.QuantizeRowTQ1_0(dst, w))
				quant.DequantizeRowTQ1_0(f, dst)
			case "halo2":
				quant.PackRowHALO2(dst, q)
			case "tq1h":
				quant.PackRowTQ1H(dst, q)
			case "sherry":
				must(t, sherry.PackRow(dst, w))
			}
			if kind == "TQ2_0" || kind == "TQ1_0" {
				for i, v := range f {
					deq[r][i] = float64(v)
				}
			} else {
				scales[r] = d
				for i, v := range q {
					deq[r][i] = float64(v)
				}
			}
		}
		var native *ternLinear
		if kind == "TQ2_0" || kind == "TQ1_0" {
			native = newTernary(kind, data, rows, k, nil)
		} else {
			native = newTernary(kind, data, rows, k, scales)
		}
		l := repack(native, mem, kern.hasI2x4())
		wantKind := "I2"
		if kern.hasI2x4() && rows%4 == 0 {
			wantKind = "I2x4"
		}
		if l.kind != wantKind || l.format() != kind {
			t.Fatalf("%s: %s, %d rows: repacked to %s (%s), want %s", kern.name, kind, rows, l.kind, l.format(), wantKind)
		}
		check := func(a *acts, r0, r1 int) {
			t.Helper()
			got := make([]float32, a.n*rows)
			l.mul(got, rows, a, r0, r1)
			for tk := range a.n {
				for r := r0; r < r1; r++ {
					var s float64
					for i := range k {
						s += deq[r][i] * float64(a.q[tk*k+i])
					}
					want := float32(s)
					if l.rowScale != nil && (kind != "TQ2_0" && kind != "TQ1_0") {
						want *= scales[r]
					}
					want *= a.scale[tk]
					if got[tk*rows+r] != want {
						t.Fatalf("%s: %s (%s, %d rows, %d tokens, rows %d–%d) token %d row %d: %v, want %v",
							kern.name, kind, l.kind, rows, a.n, r0, r1, tk, r, got[tk*rows+r], want)
					}
				}
			}
		}
		check(a, 0, rows)
		check(a, 5, rows-2)
		check(a1, 0, rows)
		check(a1, 4, rows&^3)
		check(a1, 3, rows-1)
	}
}

// checkAttention128 tests one head of headDim-128 attention kernels over n
// positions stride floats apart (a second kv head at an offset) against
// dotF32Go and axpyF32Go, to float rounding.
func checkAttention128(t *testing.T, rng *rand.Rand,
	scores func(q, k []float32, stride, n int, scale float32, out []float32),
	mix func(w, v []float32, stride, n int, o []float32)) {
	t.Helper()
	const stride = 640
	for _, n := range []int{0, 1, 3, 4, 5, 8, 130} {
		q := make([]float32, 128)
		kv := make([]float32, max(n, 1)*stride)
		for i := range q {
			q[i] = float32(rng.NormFloat64())
		}
		for i := range kv {
			kv[i] = float32(rng.NormFloat64())
		}
		off := 128 // a second kv head
		got, w := make([]float32, n), make([]float32, n)
		scores(q, kv[off:], stride, n, 0.088, got)
		for p := range n {
			want := dotF32Go(q, kv[off+p*stride:off+p*stride+128]) * 0.088
			if abs32(got[p]-want) > 1e-5*max(1, abs32(want)) {
				t.Fatalf("attnScores n %d pos %d: %v, want %v", n, p, got[p], want)
			}
			w[p] = float32(rng.Float64())
		}
		o, ref := make([]float32, 128), make([]float32, 128)
		for i := range o {
			o[i] = 7 // must be overwritten
		}
		mix(w, kv[off:], stride, n, o)
		for p := range n {
			axpyF32Go(w[p], kv[off+p*stride:off+p*stride+128], ref)
		}
		for i := range o {
			if abs32(o[i]-ref[i]) > 1e-5*max(1, abs32(ref[i])) {
				t.Fatalf("attnMix n %d [%d]: %v, want %v", n, i, o[i], ref[i])
			}
		}
	}
}
