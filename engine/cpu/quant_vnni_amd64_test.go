//go:build !purego

package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
)

// vnniQuantCase is one block type's VNNI one-token kernel: the block's
// size and where its fp16 d and dmin lie.
type vnniQuantCase struct {
	vbmi       bool // the kernel needs VBMI and GFNI too
	typ        gguf.Type
	qt         quantType
	blockBytes int
	d, dmin    int
	rows       func([]byte, q8Blocks, []float32)
}

func vnniQuantCases() []vnniQuantCase {
	return []vnniQuantCase{
		{false, gguf.TypeQ2_K, typeQ2K, 84, 80, 82, superBlockRows(rowsQ2KVNNI, 84)},
		{false, gguf.TypeQ3_K, typeQ3K, 110, 108, 108, superBlockRows(rowsQ3KVNNI, 110)},
		{true, gguf.TypeQ4_K, typeQ4K, 144, 0, 2, nibbleRows(rowsQ4KVNNI, 144)},
		{true, gguf.TypeQ5_K, typeQ5K, 176, 0, 2, nibbleRows(rowsQ5KVNNI, 176)},
		{true, gguf.TypeQ6_K, typeQ6K, 210, 208, 208, superBlockRows(rowsQ6KVNNI, 210)},
	}
}

// withNibbles adds x's codes in nibbleOrder, as quantizeBlocks does for
// kernels that read them.
func withNibbles(x q8Blocks) q8Blocks {
	x.qn = make([]int8, len(x.q))
	nibbleOrder(x.qn, x.q)
	return x
}

// vnniRows are a case's rows kernels under test: the kernel itself and
// the VNNI table's entry (useVNNI's wiring).
func vnniRows(t *testing.T, c vnniQuantCase) map[string]func([]byte, q8Blocks, []float32) {
	f := detectFeatures()
	if !f.avx2 || !f.avx512 || !f.vnni || c.vbmi && !f.vbmi {
		t.Skip("no AVX-512 VNNI (with VBMI and GFNI for this kernel) on this CPU")
	}
	return map[string]func([]byte, q8Blocks, []float32){
		"kernel": c.rows,
		"table":  newKernels(cpuFeatures{avx2: true, avx512: true, vnni: true, vbmi: true}).quant[c.qt].rows,
	}
}

// TestVNNIQuantMatchesPortable runs each VNNI kernel on 1…17 rows (the
// matrix's first and last ones) of extreme blocks (extremeQuantRows:
// fp16 extremes for d and dmin, all-zero, all-one and alternating code
// and scale bits, encoder output) and extreme activations, against the
// portable kernel to float32 rounding of the block terms (the AVX2
// tests' bound: 16 lanes here, fused), and checks nothing is written past
// the last row.
func TestVNNIQuantMatchesPortable(t *testing.T) {
	port := newKernels(cpuFeatures{})
	rng := rand.New(rand.NewPCG(21, 2))
	for _, c := range vnniQuantCases() {
		t.Run(c.typ.String(), func(t *testing.T) { vnniMatchesPortable(t, port, rng, c) })
	}
}

func vnniMatchesPortable(t *testing.T, port *kernels, rng *rand.Rand, c vnniQuantCase) {
	bb := c.blockBytes
	for kname, rows := range vnniRows(t, c) {
		name := c.typ.String() + " " + kname
		for _, nb := range []int{1, 2, 3, 9} {
			const nrows = 17
			k := 256 * nb
			w := extremeQuantRows(t, rng, c.typ, nrows, k)
			for xi, x := range extremeActs(rng, port, formQ8_K, k) {
				x = withNibbles(x)
				for n := 1; n <= nrows; n++ {
					for _, r0 := range []int{0, nrows - n} {
						rw := w[r0*bb*nb : (r0+n)*bb*nb]
						got, want := make([]float32, n+1), make([]float32, n)
						got[n] = float32(math.NaN())
						rows(rw, x, got[:n])
						port.quant[c.qt].rows(rw, x, want)
						if !math.IsNaN(float64(got[n])) {
							t.Fatalf("%s, %d blocks, %d rows: wrote %v past the last row", name, nb, n, got[n])
						}
						for i := range want {
							_, mag := quantDotReference(c.typ, formQ8_K, rw[i*bb*nb:(i+1)*bb*nb], x)
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

// TestVNNIQuantIntegerSumsExact makes every float step exact (d = dmin =
// d_x = 1, sums below 2²⁴) so that the result is the integer sums
// themselves: each VNNI kernel's Σ sc·code·x and Σ m·Σx must equal the
// portable kernel's bit for bit, on random bytes, all-one bytes and
// activations anywhere in −128…127.
func TestVNNIQuantIntegerSumsExact(t *testing.T) {
	port := newKernels(cpuFeatures{})
	rng := rand.New(rand.NewPCG(21, 3))
	for _, c := range vnniQuantCases() {
		t.Run(c.typ.String(), func(t *testing.T) { vnniIntegerSumsExact(t, port, rng, c) })
	}
}

func vnniIntegerSumsExact(t *testing.T, port *kernels, rng *rand.Rand, c vnniQuantCase) {
	bb := c.blockBytes
	for kname, rows := range vnniRows(t, c) {
		name := c.typ.String() + " " + kname
		for _, nb := range []int{1, 2, 5} {
			const nrows = 9
			w := make([]byte, nrows*nb*bb)
			for b := range nrows * nb {
				blk := w[bb*b : bb*b+bb]
				for i := range blk {
					blk[i] = [...]byte{byte(rng.IntN(256)), 0xff}[b%2]
				}
				binary.LittleEndian.PutUint16(blk[c.d:], 0x3c00)
				binary.LittleEndian.PutUint16(blk[c.dmin:], 0x3c00)
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
			x = withNibbles(x)
			got, want := make([]float32, nrows), make([]float32, nrows)
			rows(w, x, got)
			port.quant[c.qt].rows(w, x, want)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Errorf("%s, %d blocks: row %d %v, portable %v", name, nb, i, got[i], want[i])
				}
			}
		}
	}
}
