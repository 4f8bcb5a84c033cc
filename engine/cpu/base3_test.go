package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/quant"
)

// b3Digit is digit n of a B3 byte by the format's arithmetic, written out
// independently of tq1Trits: ⌊3·(b·3^n mod 256)/256⌋.
func b3Digit(b byte, n int) int {
	c := int(b)
	for range n {
		c = 3 * c % 256
	}
	return 3 * c / 256
}

// TestB3Encoding: every group of five codes survives encodeB3 and the
// digit arithmetic, in every plane position, and a short last chunk keeps
// only its planes.
func TestB3Encoding(t *testing.T) {
	for _, k := range []int{64, 256, 320, 576, 2560, 6912} {
		rb := rowBytesFor("B3", k)
		if want := (k + 319) / 320 * 64; rb != want {
			t.Fatalf("K %d: row bytes %d, want %d", k, rb, want)
		}
		w := make([]int8, k)
		for i := range w {
			// Walk all 243 combinations of five digits along the row.
			v := i / 64 % 243
			for range i % 320 / 64 {
				v /= 3
			}
			w[i] = int8(v%3) - 1
		}
		row := make([]byte, rb)
		encodeB3(row, w)
		for i := range k {
			c, n := i/320, i%320/64
			if got := b3Digit(row[64*c+i%64], n) - 1; got != int(w[i]) {
				t.Fatalf("K %d weight %d: decoded %d, want %d", k, i, got, w[i])
			}
			if d := tq1Trits[row[64*c+i%64]][n]; int(d) != int(w[i])+1 {
				t.Fatalf("K %d weight %d: tq1Trits %d, want %d", k, i, d, w[i]+1)
			}
		}
	}
}

// TestB3TritArithmetic checks, for every byte, the two identities the
// SIMD kernels rest on: 3·c = 256·t + (3·c mod 256) (the VNNI kernel's
// Σ t·x = (3·Σ c·x − Σ c'·x)/256), and the byte-average form of
// ⌊3c/256⌋ the VNNI prefill kernel uses: with c' = max(c−1, 0),
// ((c' + ⌊(c'+1)/2⌋ + 1)/2) >> 6.
func TestB3TritArithmetic(t *testing.T) {
	for c := range 256 {
		tr := 3 * c / 256
		if 3*c != 256*tr+3*c%256 {
			t.Fatalf("c %d", c)
		}
		c1 := max(c-1, 0)
		h := (c1 + 1) >> 1
		if v := (c1 + h + 1) >> 1; v>>6 != tr || v > 255 {
			t.Fatalf("c %d: average form %d, want %d", c, v>>6, tr)
		}
		if v := (c + c>>1) >> 1; v>>6 != tr { // NEON's halving add
			t.Fatalf("c %d: halving-add form %d, want %d", c, v>>6, tr)
		}
	}
}

// TestB3KernelsExact multiplies B3 matrices of random bytes (every byte
// value, not only the 243 an encoder writes) with every kernel table this
// CPU runs: each product must equal the float64 sum of the digits' weights
// times the activations, rounded to float32 once and scaled as the I2
// kernels scale, and the portable kernel's result, bit for bit: whole
// groups, partial row ranges, one token and five (decode and prefill
// kernels), every K mod 320 the layout allows, and the extremes (all
// codes 2 against ±127) that bound the kernels' sums.
func TestB3KernelsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kern := range kernelSets() {
		for _, k := range []int{64, 128, 192, 256, 320, 640, 768, 1344, 2560, 6912} {
			for _, extreme := range []bool{false, true} {
				const rows = 12
				rb := rowBytesFor("B3", k)
				data := make([]byte, rows*rb)
				for i := range data {
					data[i] = byte(rng.IntN(256))
					if extreme {
						data[i] = 0xff // ⌈242·256/243⌉: all five digits 2
					}
				}
				scales := make([]float32, rows)
				for r := range scales {
					scales[r] = float32(rng.Float64() + 0.01)
				}
				l := newTernary("B3", data, rows, k, scales)
				for _, n := range []int{1, 5} {
					a := newActs(kern, rng, n, k)
					a.quantize()
					if extreme {
						sign := int8(1 - 2*(k/64%2))
						for i := range a.q {
							a.q[i] = 127 * sign
						}
						for tk := range n {
							a.total[tk] = 127 * int32(sign) * int32(k)
						}
					}
					for _, rr := range [][2]int{{0, rows}, {4, 8}, {1, rows - 2}, {5, 7}} {
						checkB3(t, kern.name, l, a, rr[0], rr[1])
					}
				}
			}
		}
	}
}

// checkB3 compares l.mul over rows [r0, r1) with the float64 reference.
func checkB3(t *testing.T, name string, l *ternLinear, a *acts, r0, r1 int) {
	t.Helper()
	k := a.k
	got := make([]float32, a.n*l.r)
	l.mul(got, l.r, a, r0, r1)
	for tk := range a.n {
		x := a.q[tk*k : (tk+1)*k]
		for r := r0; r < r1; r++ {
			row := l.row(r)
			var s float64
			for i := range k {
				c, n := i/320, i%320/64
				s += float64(b3Digit(row[256*c+i%64], n)-1) * float64(x[i])
			}
			want := float32(s) * l.rowScale[r] * a.scale[tk]
			if got[tk*l.r+r] != want {
				t.Fatalf("%s: K %d, %d tokens, rows %d–%d: token %d row %d: %v, want %v", name, k, a.n, r0, r1, tk, r, got[tk*l.r+r], want)
			}
			if g := float32(b3DotGo(row, x, a.total[tk])) * l.rowScale[r] * a.scale[tk]; g != want {
				t.Fatalf("K %d: token %d row %d: portable %v, reference %v", k, tk, r, g, want)
			}
		}
	}
}

// TestB3Repack: TQ1_0 (one d per row) and tq1h matrices load as B3 where
// the table reads it, in fewer bytes than I2, and multiply
// exactly as the dequantized weights do; rows not a multiple of four and
// TQ1_0 with varying block scales go the I2/TQ2_0 way as before.
func TestB3Repack(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	mem := &arena{}
	defer mem.Close()
	for _, kern := range kernelSets() {
		for _, k := range []int{256, 768, 2560} {
			for _, rows := range []int{8, 20, 6} {
				for _, kind := range []string{"TQ1_0", "tq1h"} {
					rb := rowBytesFor(kind, k)
					data := make([]byte, rows*rb)
					scales := make([]float32, rows)
					deq := make([][]float64, rows)
					w, q := make([]float32, k), make([]int8, k)
					for r := range rows {
						d := float32(rng.Float64() + 0.01)
						for i := range k {
							q[i] = int8(rng.IntN(3) - 1)
							w[i] = float32(q[i]) * d
						}
						dst := data[r*rb : (r+1)*rb]
						deq[r] = make([]float64, k)
						if kind == "TQ1_0" {
							must(t, quant.QuantizeRowTQ1_0(dst, w))
							f := make([]float32, k)
							quant.DequantizeRowTQ1_0(f, dst)
							for i, v := range f {
								deq[r][i] = float64(v)
							}
							continue
						}
						quant.PackRowTQ1H(dst, q)
						scales[r] = d
						for i, v := range q {
							deq[r][i] = float64(v)
						}
					}
					native := newTernary(kind, data, rows, k, nil)
					if kind == "tq1h" {
						native = newTernary(kind, data, rows, k, scales)
					}
					l := repackFor(kern, native, mem, kern.hasI2x4())
					wantB3 := kern.readsB3() && rows%4 == 0
					if (l.kind == "B3") != wantB3 || l.format() != kind {
						t.Fatalf("%s: %s, %d rows: loaded as %s (%s)", kern.name, kind, rows, l.kind, l.format())
					}
					// B3 is never larger than I2 (the other way to load these
					// rows), nor than the file where its chunks fill the row.
					if i2 := int64(rows*rowBytesFor("I2", k) + 4*rows); l.kind == "B3" && (l.size() > i2 || k%320 == 0 && l.size() > native.size()) {
						t.Fatalf("%s: %s K %d: B3 takes %d bytes, I2 %d, the file %d", kern.name, kind, k, l.size(), i2, native.size())
					}
					for _, n := range []int{1, 6} {
						a := newActs(kern, rng, n, k)
						a.quantize()
						got := make([]float32, n*rows)
						l.mul(got, rows, a, 0, rows)
						for tk := range n {
							for r := range rows {
								var s float64
								for i := range k {
									s += deq[r][i] * float64(a.q[tk*k+i])
								}
								want := float32(s)
								if kind == "tq1h" {
									want *= scales[r]
								}
								want *= a.scale[tk]
								if got[tk*rows+r] != want {
									t.Fatalf("%s: %s as %s, K %d, %d tokens: token %d row %d: %v, want %v", kern.name, kind, l.kind, k, n, tk, r, got[tk*rows+r], want)
								}
							}
						}
					}
				}
			}
		}
	}
	// Varying block scales: TQ1_0 keeps its blocks (as TQ2_0), not B3.
	k, rows := 512, 4
	data := make([]byte, rows*rowBytesFor("TQ1_0", k))
	w := make([]float32, k)
	for r := range rows {
		for i := range w {
			w[i] = float32(rng.IntN(3)-1) * float32(1+i/256)
		}
		rb := rowBytesFor("TQ1_0", k)
		must(t, quant.QuantizeRowTQ1_0(data[r*rb:(r+1)*rb], w))
	}
	if l := repackFor(newKernels(detectFeatures()), newTernary("TQ1_0", data, rows, k, nil), mem, false); l.kind != "TQ2_0" {
		t.Fatalf("TQ1_0 with varying block scales loaded as %s, want TQ2_0", l.kind)
	}
}
