package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSherryLUTTables holds the tables kernel to the portable one on
// random and extreme activations (−128 and 127 in every position of a
// group).
func TestSherryLUTTables(t *testing.T) {
	kern := hostKernels(t)
	if kern.sherryLUT == nil {
		t.Skip("no Sherry lookup kernels on this CPU (they need AVX-512 VBMI and VNNI)")
	}
	rng := rand.New(rand.NewPCG(11, 1))
	for _, k := range []int{4, 32, 2560, 6912} {
		q := make([]int8, k)
		for i := range q {
			q[i] = int8(rng.IntN(256) - 128)
			if i < 64 {
				q[i] = [2]int8{-128, 127}[(i>>(i/16))&1]
			}
		}
		got, want := make([]int16, 8*k+1), make([]int16, 8*k)
		got[8*k] = 12345
		kern.sherryLUT.tables(q, got[:8*k])
		sherryTablesGo(q, want)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("K=%d: group %d code %d: %d, want %d", k, i/32, i%32, got[i], want[i])
			}
		}
		if got[8*k] != 12345 {
			t.Fatalf("K=%d: wrote past the tables", k)
		}
	}
}

// TestSherryLUTProduct multiplies Sherry matrices moved to the lookup
// layout, over row ranges that start and end inside blocks and matrices
// whose last block is short, for one and five tokens, against the
// portable kernel on the rows as stored: bit for bit (the same integer
// sums, scaled in the same order).
func TestSherryLUTProduct(t *testing.T) {
	kern := hostKernels(t)
	if kern.sherryLUT == nil {
		t.Skip("no Sherry lookup kernels on this CPU (they need AVX-512 VBMI and VNNI)")
	}
	port := newKernels(cpuFeatures{})
	rng := rand.New(rand.NewPCG(11, 2))
	mem := &arena{}
	defer mem.Close()
	for _, k := range []int{32, 256, 2560} {
		for _, rows := range []int{1, 31, 32, 33, 100, 128, 129, 416} {
			data, _ := sherryTestRows(t, rng, rows, k, false)
			scales := make([]float32, rows)
			for i := range scales {
				scales[i] = 0.25 + rng.Float32()
			}
			l := newTernary("sherry", data, rows, k, scales)
			lt := repackSherryLUT(kern, l, mem)
			if lt == nil || lt.kind != "sherryT" {
				t.Fatalf("K=%d, %d rows: not moved to the lookup layout", k, rows)
			}
			for r := range rows {
				for g := range k / 4 {
					if c, want := lt.sherryLUTCode(r, g), sherryCode(l.data[r*l.rowBytes:], g); c != want {
						t.Fatalf("K=%d, %d rows: row %d group %d code %d, as stored %d", k, rows, r, g, c, want)
					}
				}
			}
			for _, n := range []int{1, 5} {
				a := newActs(kern, rng, n, k)
				a.prepare(lt)
				ap := newActs(port, rng, n, k)
				copy(ap.f, a.f)
				ap.prepare(l)
				want := make([]float32, n*rows)
				l.mul(want, rows, ap, 0, rows)
				for _, span := range [][2]int{{0, rows}, {rows / 3, rows - rows/5}, {min(16, rows), rows}, {0, min(48, rows)}} {
					r0, r1 := span[0], span[1]
					got := make([]float32, n*rows)
					for i := range got {
						got[i] = float32(math.NaN())
					}
					lt.mul(got, rows, a, r0, r1)
					for tk := range n {
						for r := range rows {
							g := got[tk*rows+r]
							if r < r0 || r >= r1 {
								if !math.IsNaN(float64(g)) {
									t.Fatalf("K=%d, %d rows, rows %d…%d, token %d: wrote row %d", k, rows, r0, r1, tk, r)
								}
								continue
							}
							if w := want[tk*rows+r]; math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("K=%d, %d rows, rows %d…%d, token %d: row %d %v, as stored %v", k, rows, r0, r1, tk, r, g, w)
							}
						}
					}
				}
			}
		}
	}
}

// sherryLUTCode is row r's code of group g in the lookup layout.
func (l *ternLinear) sherryLUTCode(r, g int) int {
	blk := l.data[r/lutBlock*lutBlockBytes(l.c):]
	rr := r % lutBlock
	bit := 64*8*(g/3) + 64*(rr/4) + 20*(g%3) + 5*(rr%4)
	v := uint16(blk[bit>>3])
	if bit>>3+1 < len(blk) {
		v |= uint16(blk[bit>>3+1]) << 8
	}
	return int(v >> (bit & 7) & 31)
}

// sherryTablesGo is the reference tables kernel.
func sherryTablesGo(q []int8, dst []int16) {
	for g := range len(q) / 4 {
		x := q[4*g : 4*g+4]
		t := dst[32*g : 32*g+32]
		for c := range 32 {
			w := &sherryWeights[c]
			t[c] = int16(w[0])*int16(x[0]) + int16(w[1])*int16(x[1]) + int16(w[2])*int16(x[2]) + int16(w[3])*int16(x[3])
		}
	}
}
