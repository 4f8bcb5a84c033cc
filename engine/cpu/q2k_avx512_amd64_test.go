//go:build !purego

package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
)

// q2kVNNIRows are the VNNI Q2_K rows kernels under test: the kernel
// itself and the VNNI table's entry (useVNNI's wiring).
func q2kVNNIRows(t *testing.T) map[string]func([]byte, q8Blocks, []float32) {
	f := detectFeatures()
	if !f.avx2 || !f.avx512 || !f.vnni {
		t.Skip("no AVX-512 VNNI on this CPU")
	}
	return map[string]func([]byte, q8Blocks, []float32){
		"kernel": superBlockRows(rowsQ2KVNNI, 84),
		"table":  newKernels(cpuFeatures{avx2: true, avx512: true, vnni: true}).quant[typeQ2K].rows,
	}
}

// TestQ2KVNNIMatchesPortable runs the VNNI Q2_K kernel on 1…17 rows (the
// matrix's first and last ones) of extreme blocks (extremeQuantRows:
// fp16 extremes for d and dmin, all-zero, all-one and alternating code
// and scale bits, encoder output) and extreme activations, against the
// portable kernel to float32 rounding of the block terms (the AVX2
// tests' bound: 16 lanes here, fused), and checks nothing is written past
// the last row.
func TestQ2KVNNIMatchesPortable(t *testing.T) {
	port := newKernels(cpuFeatures{})
	rng := rand.New(rand.NewPCG(21, 2))
	for name, rows := range q2kVNNIRows(t) {
		for _, nb := range []int{1, 2, 3, 9} {
			const nrows = 17
			k := 256 * nb
			w := extremeQuantRows(t, rng, gguf.TypeQ2_K, nrows, k)
			for xi, x := range extremeActs(rng, port, formQ8_K, k) {
				for n := 1; n <= nrows; n++ {
					for _, r0 := range []int{0, nrows - n} {
						rw := w[r0*84*nb : (r0+n)*84*nb]
						got, want := make([]float32, n+1), make([]float32, n)
						got[n] = float32(math.NaN())
						rows(rw, x, got[:n])
						port.quant[typeQ2K].rows(rw, x, want)
						if !math.IsNaN(float64(got[n])) {
							t.Fatalf("%s, %d blocks, %d rows: wrote %v past the last row", name, nb, n, got[n])
						}
						for i := range want {
							_, mag := quantDotReference(gguf.TypeQ2_K, formQ8_K, rw[i*84*nb:(i+1)*84*nb], x)
							if tol := float64(nb+16) * 0x1p-23 * mag; math.Abs(float64(got[i])-float64(want[i])) > tol {
								t.Fatalf("%s, %d blocks, activations %d, rows %d…%d: row %d %v, portable %v (Σ|terms| %v)", name, nb, xi, r0, r0+n-1, r0+i, got[i], want[i], mag)
							}
						}
					}
				}
			}
		}
		out := []float32{1, 2}
		rows(nil, q8Blocks{}, out)
		if out[0] != 0 || out[1] != 0 {
			t.Errorf("%s, no blocks: %v, want zeros", name, out)
		}
	}
}

// TestQ2KVNNIIntegerSumsExact makes every float step exact (d = dmin =
// d_x = 1, sums below 2²⁴) so that the result is the integer sums
// themselves: the VNNI kernel's Σ sc·code·x and Σ m·Σx must equal the
// portable kernel's bit for bit, on random bytes, all-one bytes and
// activations anywhere in −128…127.
func TestQ2KVNNIIntegerSumsExact(t *testing.T) {
	port := newKernels(cpuFeatures{})
	rng := rand.New(rand.NewPCG(21, 3))
	for name, rows := range q2kVNNIRows(t) {
		for _, nb := range []int{1, 2, 5} {
			const nrows = 9
			w := make([]byte, nrows*nb*84)
			for b := range nrows * nb {
				blk := w[84*b : 84*b+84]
				for i := range blk[:80] {
					blk[i] = [...]byte{byte(rng.IntN(256)), 0xff}[b%2]
				}
				binary.LittleEndian.PutUint16(blk[80:], 0x3c00)
				binary.LittleEndian.PutUint16(blk[82:], 0x3c00)
			}
			x := q8Blocks{q: make([]int8, 256*nb), d: make([]float32, nb), sum: make([]int16, 16*nb)}
			for i := range x.q {
				x.q[i] = int8(rng.IntN(256) - 128)
				if i%97 == 0 {
					x.q[i] = -128
				}
				x.sum[i/16] += int16(x.q[i])
			}
			for b := range x.d {
				x.d[b] = 1
			}
			got, want := make([]float32, nrows), make([]float32, nrows)
			rows(w, x, got)
			port.quant[typeQ2K].rows(w, x, want)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Errorf("%s, %d blocks: row %d %v, portable %v", name, nb, i, got[i], want[i])
				}
			}
		}
	}
}
