package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgectl/edgectl/format/h1b"
	"github.com/edgectl/edgectl/sherry"
)

// sherryTestRows packs n random 3:4-sparse rows of k weights with Sherry
// (every group of 4 holds one zero, as Sherry requires); with extreme,
// every group is {0, +1, +1, +1} (code 7: the largest field values the
// SIMD kernels' int16 sums see). It returns the packed rows and their
// weights as sherry.UnpackRow reads them back.
func sherryTestRows(t *testing.T, rng *rand.Rand, n, k int, extreme bool) ([]byte, [][]int8) {
	t.Helper()
	rb := k * 5 / 32
	data := make([]byte, n*rb)
	w := make([][]int8, n)
	f := make([]float32, k)
	for r := range n {
		for i := 0; i < k; i += 4 {
			zp := rng.IntN(4)
			for p := range 4 {
				v := float32(2*rng.IntN(2) - 1)
				if extreme {
					zp, v = 0, 1
				}
				if p == zp {
					v = 0
				}
				f[i+p] = v * 0.5
			}
		}
		must(t, sherry.PackRow(data[r*rb:(r+1)*rb], f))
		w[r] = make([]int8, k)
		sherry.UnpackRow(w[r], data[r*rb:(r+1)*rb])
		for i := range k {
			if float32(w[r][i])*0.5 != f[i] {
				t.Fatalf("sherry.PackRow is lossy at row %d weight %d: %v → %d", r, i, f[i], w[r][i])
			}
		}
	}
	return data, w
}

// sherryRef is the float64 reference: Σ w·q of the unpacked weights.
func sherryRef(w []int8, q []int8) float64 {
	var s float64
	for i, v := range w {
		s += float64(v) * float64(q[i])
	}
	return s
}

// sherryTestActs is n activation rows of width k for kern: quantized
// normal values with an outlier, or every q at +127 / −127 (alternating
// by row) for the extreme case.
func sherryTestActs(kern *kernels, rng *rand.Rand, n, k int, extreme bool) *acts {
	a := newActs(kern, rng, n, k)
	a.f[min(5, k-1)] = 40
	a.quantize()
	if extreme {
		for t := range n {
			sign := int8(1 - 2*(t%2))
			for i := range k {
				a.q[t*k+i] = 127 * sign
			}
			a.total[t] = int32(k) * 127 * int32(sign)
		}
	}
	return a
}

// TestSherryKernelsExact checks every table's native Sherry kernels (rows:
// decode, rows4: prefill) bit for bit against the portable ones and the
// float64 reference on the unpacked weights, for widths that fill the
// SIMD units exactly, leave a tail of groups, or are shorter than a unit,
// and for row counts around the kernels' groups of four; then at the
// extremes of the AVX2 kernels' int16 sums (34 AVX2 units: two widenings).
func TestSherryKernelsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	tested := 0
	for _, kern := range kernelSets() {
		sk := &kern.tern[typeSherry]
		if sk.rows == nil {
			continue
		}
		tested++
		for _, c := range []struct {
			k, n    int
			extreme bool
		}{
			{256, 1, false}, {512, 4, false}, {2560, 9, false}, {384, 7, false}, {416, 5, false},
			{96, 3, false}, {32, 1, false}, {1280, 70, false}, {768, 8, false},
			{4352, 6, true}, {4384, 5, true}, {2560, 4, true},
		} {
			t.Run(fmt.Sprintf("%s/k%d/n%d/extreme=%v", kern.name, c.k, c.n, c.extreme), func(t *testing.T) {
				data, w := sherryTestRows(t, rng, c.n, c.k, c.extreme)
				rb := c.k * 5 / 32
				a := sherryTestActs(kern, rng, 4, c.k, c.extreme)
				scale := make([]float32, c.n)
				for r := range scale {
					scale[r] = float32(rng.Float64() + 0.01)
				}
				for tk := range 4 {
					q := a.q[tk*c.k : (tk+1)*c.k]
					got, port := make([]float32, c.n), make([]float32, c.n)
					sk.rows(data, q, a.total[tk], a.scale[tk], scale, got)
					sherryRowsGo(data, q, a.total[tk], a.scale[tk], scale, port)
					for r := range c.n {
						want := float32(sherryRef(w[r], q)) * scale[r] * a.scale[tk]
						if got[r] != want || port[r] != want {
							t.Fatalf("rows: token %d row %d: %s %v, portable %v, reference %v", tk, r, kern.name, got[r], port[r], want)
						}
					}
				}
				got := make([]int32, 4*c.n)
				sk.rows4(data, a.q, c.k, a.total, got)
				for r := range c.n {
					for tk := range 4 {
						q := a.q[tk*c.k : (tk+1)*c.k]
						want := sherryRef(w[r], q)
						if float64(got[4*r+tk]) != want || sherryDot(data[r*rb:(r+1)*rb], q, 0) != got[4*r+tk] {
							t.Fatalf("rows4: row %d token %d: %s %d, reference %v", r, tk, kern.name, got[4*r+tk], want)
						}
					}
				}
			})
		}
	}
	if tested == 0 {
		t.Skip("no kernel table here has native Sherry kernels")
	}
}

// TestSherryPlanes checks each kernel set's plane-order copy of the
// activations (an in-register transpose; NEON's LD4) against its
// definition: plane p of a unit holds the activations 4c+p of the unit's
// codes c, in the order the set's decoder leaves the codes.
func TestSherryPlanes(t *testing.T) {
	tested := 0
	for _, f := range featureLadder(detectFeatures()) {
		s := sherrySIMDFor(f)
		if s == nil {
			continue
		}
		tested++
		const nu = 3
		q := make([]int8, nu*s.unit)
		for i := range q {
			q[i] = int8(i * 7)
		}
		dst := make([]int8, len(q))
		s.planes(&dst[0], &q[0], nu)
		n := s.unit / 4 // codes a unit
		for u := range nu {
			for p := range 4 {
				for i := range n {
					c := i
					if s.order != nil {
						c = i&^15 + int(s.order[i&15])
					}
					if got, want := dst[u*s.unit+p*n+i], q[u*s.unit+4*c+p]; got != want {
						t.Fatalf("%+v: unit %d plane %d byte %d: %d, want q[%d] = %d", f, u, p, i, got, u*s.unit+4*c+p, want)
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("no Sherry kernels on this CPU")
	}
}

// TestSherryMulNative runs ternLinear.mul on a Sherry matrix kept in its
// file layout (as EDGECTL_NATIVE_PACKING keeps it) for decode and for a
// 9-token batch (two groups of four through rows4 and one token through
// rows), over whole and partial row ranges that cross the prefill tile,
// against the float64 reference.
func TestSherryMulNative(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 21))
	const rows, k = 70, 768
	data, w := sherryTestRows(t, rng, rows, k, false)
	scales := make([]float32, rows)
	for r := range scales {
		scales[r] = float32(rng.Float64() + 0.01)
	}
	l := newTernary("sherry", data, rows, k, scales)
	for _, kern := range kernelSets() {
		if kern.tern[typeSherry].rows == nil {
			continue
		}
		for _, n := range []int{1, 9} {
			a := sherryTestActs(kern, rng, n, k, false)
			for _, rr := range [][2]int{{0, rows}, {3, 67}, {64, 70}} {
				got := make([]float32, n*rows)
				l.mul(got, rows, a, rr[0], rr[1])
				for tk := range n {
					for r := rr[0]; r < rr[1]; r++ {
						want := float32(sherryRef(w[r], a.q[tk*k:(tk+1)*k])) * scales[r] * a.scale[tk]
						if got[tk*rows+r] != want {
							t.Fatalf("%s: %d tokens, rows %d–%d: token %d row %d: %v, want %v", kern.name, n, rr[0], rr[1], tk, r, got[tk*rows+r], want)
						}
					}
				}
			}
		}
	}
}

// TestSherryNativeLoad loads a generated Sherry .h1b as the load places it
// by default (in the lookup layout where the table has its kernels,
// kernels.sherryLUT; else as stored where the table's Sherry kernels beat
// the I2x4 repack, kernels.sherryNative; else repacked to I2/I2x4) and with
// EDGECTL_NATIVE_PACKING=1 (as stored, run by the table's Sherry kernels
// where it has them), and the default load's matrices repacked by hand:
// the matrices take 2 or 1.25 bits a weight, and a prompt's and the next
// token's logits are the same bit for bit (every product is the exact
// integer Σ w·q times the same two scales).
func TestSherryNativeLoad(t *testing.T) {
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 2, heads: 4, kv: 2, vocab: 512, seed: 21}
	path := filepath.Join(t.TempDir(), "m.h1b")
	must(t, spec.writeH1B(path, h1b.V3Sherry))
	var logits [3][][]float32
	for i, load := range []string{"default", "native", "repacked"} {
		if load == "native" {
			t.Setenv("EDGECTL_NATIVE_PACKING", "1")
		}
		m := loadModel(t, path)
		i2 := "I2"
		if m.kern.hasI2x4() {
			i2 = "I2x4"
		}
		wantKind, bits := i2, 2.0
		if m.kern.sherryNative || load == "native" {
			wantKind, bits = "sherry", 1.25
		}
		if m.kern.sherryLUT != nil && load == "default" {
			// The lookup layout (sherry_lut.go): 1.25 bits in 60 of every
			// 64, whole triples of groups a block.
			c, r := m.w.layers[0].q.cols(), m.w.layers[0].q.rows()
			wantKind, bits = "sherryT", float64(8*lutBlockBytes(c)*((r+lutBlock-1)/lutBlock))/float64(r*c)
		}
		if load == "repacked" {
			for li := range m.w.layers {
				L := &m.w.layers[li]
				for _, w := range []*linear{&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down} {
					*w = repack((*w).(*ternLinear), m.mem, m.kern.hasI2x4())
				}
			}
			wantKind, bits = i2, 2.0
		}
		q := m.w.layers[0].q.(*ternLinear)
		if q.kind != wantKind || q.format() != "sherry" || float64(len(q.data)*8)/float64(q.r*q.c) != bits {
			t.Fatalf("%s load, kernels %s: q is %s (%s, %d bytes for %d×%d), want %s at %v bits a weight", load, m.kern.name, q.kind, q.format(), len(q.data), q.r, q.c, wantKind, bits)
		}
		st := newState(m)
		for _, toks := range [][]int{{1, 7, 300, 42, 5, 9}, {11}} {
			out, err := st.forward(context.Background(), toks)
			must(t, err)
			logits[i] = append(logits[i], slices.Clone(out))
		}
		st.release()
	}
	for i := range logits[1:] {
		for j := range logits[0] {
			if !slices.Equal(logits[0][j], logits[i+1][j]) {
				t.Fatalf("step %d: logits of load %d differ from the default load's", j, i+1)
			}
		}
	}
}
