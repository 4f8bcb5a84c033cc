//go:build !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
)

// fp16 scales at the edges: the largest finite of both signs, the
// smallest subnormal, a negative normal near the bottom, zero and 1.
var quantEdgeScales = []uint16{0x7bff, 0xfbff, 0x0001, 0x8400, 0x0000, 0x3c00}

// quantEdgeBlock is a block of typ with its fp16 scale fields (d, and
// m/dmin where the type has one) set to s and every code byte fill; the
// K-quants' sub-block scales get fill too (all 6-bit scales and mins at
// their largest with 0xff, Q6_K's int8 scales at −1 or −128).
func quantEdgeBlock(typ gguf.Type, s uint16, fill byte) []byte {
	b := make([]byte, typ.TypeSize())
	for i := range b {
		b[i] = fill
	}
	put := func(off int) { binary.LittleEndian.PutUint16(b[off:], s) }
	switch typ {
	case gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeIQ4_NL:
		put(0)
	case gguf.TypeQ4_1, gguf.TypeQ5_1, gguf.TypeQ4_K, gguf.TypeQ5_K:
		put(0)
		put(2)
	case gguf.TypeQ2_K:
		put(80)
		put(82)
	case gguf.TypeQ3_K:
		put(108)
	case gguf.TypeQ6_K:
		put(208)
	}
	return b
}

// quantARM64Case is a test case for the arm64 block-type kernels: 17
// rows of nb blocks of typ (quantTestRows's, with an edge block — every
// code byte one fill, the fp16 scales one of quantEdgeScales — at a
// random position of rows 3…) and four activation rows in typ's form,
// the last one every code −127 (and +127 in the 32-element form).
func quantARM64Case(t *testing.T, rng *rand.Rand, kern *kernels, typ gguf.Type, form blockForm, nb int) ([]byte, *acts) {
	bs, ts := int(typ.BlockSize()), int(typ.TypeSize())
	k := nb * bs
	w := quantTestRows(t, rng, typ, quantARM64Rows, k)
	fills := []byte{0x00, 0xff, 0x80, 0x7f, 0x55, 0xaa}
	for r := 3; r < quantARM64Rows; r++ {
		at := rng.IntN(nb)
		s := quantEdgeScales[r%len(quantEdgeScales)]
		copy(w[(r*nb+at)*ts:], quantEdgeBlock(typ, s, fills[r%len(fills)]))
	}
	a := quantTestActs(kern, rng, 4, k)
	for i := range k {
		a.f[3*k+i] = -1
		if i%3 == 0 && bs == 32 {
			a.f[3*k+i] = 1
		}
	}
	a.quantizeBlocks(form)
	return w, a
}

const quantARM64Rows = 17

// quantARM64Blocks are the row lengths in blocks the tests use: around
// the 32-element kernels' four-block steps, a few super-blocks.
func quantARM64Blocks(typ gguf.Type) []int {
	if typ.BlockSize() == 256 {
		return []int{1, 2, 3, 5}
	}
	return []int{1, 2, 3, 4, 5, 7, 8, 9, 13}
}

// checkQuantARM64 compares got, token tok's products with rows r0… of
// w, with the portable kernel's, to rounding as
// TestQuantSIMDKernelsMatchPortable does.
func checkQuantARM64(t *testing.T, kern *kernels, qt quantType, w []byte, rb int, x q8Blocks, r0 int, got []float32, what string) {
	t.Helper()
	typ, form := quantTypes[qt].gguf, quantTypes[qt].form
	for i, g := range got {
		row := w[(r0+i)*rb : (r0+i+1)*rb]
		want := quantTypes[qt].dot(row, x)
		_, mag := quantDotReference(typ, form, row, x)
		if math.Abs(float64(g-want)) > 2e-5*mag+1e-30 || math.IsNaN(float64(g)) {
			t.Fatalf("%s: row %d: %s %v, portable %v (Σ|terms| %v)", what, r0+i, kern.name, g, want, mag)
		}
	}
}

// TestQuantARM64Rows checks each NEON table's block-type kernels against
// the portable ones row by row: every nrows from 1 to 17 (all rows in
// one call), block counts around the four-block steps, random blocks
// (quantized and random bytes), edge blocks (every code at an extreme,
// fp16 scales at the edges: negative d and dmin, Q6_K's negative int8
// scales, subnormals, zero), and activations at ±127 everywhere.
func TestQuantARM64Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 64))
	for _, kern := range arm64Variants(t) {
		for qt := range numQuantTypes {
			typ, form := quantTypes[qt].gguf, quantTypes[qt].form
			t.Run(kern.name+"/"+typ.String(), func(t *testing.T) {
				for _, nb := range quantARM64Blocks(typ) {
					w, a := quantARM64Case(t, rng, kern, typ, form, nb)
					rb := nb * int(typ.TypeSize())
					for tok := range a.n {
						x := a.blockRow(form, tok)
						for nrows := 1; nrows <= quantARM64Rows; nrows++ {
							r0 := rng.IntN(quantARM64Rows - nrows + 1)
							got := make([]float32, nrows)
							kern.quant[qt].rows(w[r0*rb:(r0+nrows)*rb], x, got)
							checkQuantARM64(t, kern, qt, w, rb, x, r0, got, fmt.Sprintf("%d blocks, token %d, %d rows", nb, tok, nrows))
						}
					}
				}
			})
		}
	}
}

// TestQuantARM64Tiles checks the four-token (prefill) kernels the same
// way: every nrows from 1 to 17 against four tokens in one call, the
// outputs ldo = nrows+3 apart, whose gaps must stay untouched.
func TestQuantARM64Tiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 65))
	for _, kern := range arm64Variants(t) {
		for qt := range numQuantTypes {
			qk := kern.quant[qt]
			if qk.rowsN == nil {
				continue
			}
			typ, form := quantTypes[qt].gguf, quantTypes[qt].form
			t.Run(kern.name+"/"+typ.String(), func(t *testing.T) {
				for _, nb := range quantARM64Blocks(typ) {
					w, a := quantARM64Case(t, rng, kern, typ, form, nb)
					rb := nb * int(typ.TypeSize())
					g := qk.tokens
					for nrows := 1; nrows <= quantARM64Rows; nrows++ {
						r0 := rng.IntN(quantARM64Rows - nrows + 1)
						ldo := nrows + 3
						out := make([]float32, g*ldo)
						for i := range out {
							out[i] = -7
						}
						qk.rowsN(w[r0*rb:(r0+nrows)*rb], tileActs(a, form, 0, g), out[:(g-1)*ldo+nrows], ldo)
						for tok := range g {
							for _, v := range out[tok*ldo+nrows : tok*ldo+ldo] {
								if v != -7 {
									t.Fatalf("%d blocks, %d rows: token %d wrote %v past its rows", nb, nrows, tok, v)
								}
							}
							checkQuantARM64(t, kern, qt, w, rb, a.blockRow(form, tok), r0, out[tok*ldo:tok*ldo+nrows],
								fmt.Sprintf("%d blocks, %d rows, token %d of %d", nb, nrows, tok, g))
						}
					}
				}
			})
		}
	}
}

// TestQuantARM64EmptyRows: no blocks writes zeros, as the portable kernel
// does (the four-token kernels only into their rows), and no rows touches
// nothing.
func TestQuantARM64EmptyRows(t *testing.T) {
	for _, kern := range arm64Variants(t) {
		for qt := range numQuantTypes {
			out := []float32{1, 2, 3}
			kern.quant[qt].rows(nil, q8Blocks{}, out)
			if out[0] != 0 || out[1] != 0 || out[2] != 0 {
				t.Fatalf("%s %s with no blocks: %v", kern.name, quantTypes[qt].gguf, out)
			}
			kern.quant[qt].rows(nil, q8Blocks{}, nil)
			if rowsN := kern.quant[qt].rowsN; rowsN != nil {
				out := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11} // 4 tokens × 2 rows, ldo 3
				rowsN(nil, q8Blocks{}, out, 3)
				if want := []float32{0, 0, 3, 0, 0, 6, 0, 0, 9, 0, 0}; !slices.Equal(out, want) {
					t.Fatalf("%s %s four tokens with no blocks: %v, want %v", kern.name, quantTypes[qt].gguf, out, want)
				}
			}
		}
	}
}
