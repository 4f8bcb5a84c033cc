//go:build !purego

package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/half"
)

// moreAVX2Types are the block types quant_more_amd64.s multiplies.
var moreAVX2Types = []quantType{typeQ4_1, typeQ5_0, typeQ5_1, typeIQ4NL, typeQ2K, typeQ3K}

// TestQuantAVX2MoreMatchPortable calls the AVX2 rows kernels of Q4_1,
// Q5_0, Q5_1, IQ4_NL, Q2_K and Q3_K directly, on 1…17 rows (the last ones
// of the matrix among them) of blocks with extreme scales and mins of
// both signs, all-zero and all-one code bits, and activations at ±127
// (the largest pair sums), and checks each row against the portable
// kernel to float32 rounding of the block terms, and that nothing is
// written past the last row.
func TestQuantAVX2MoreMatchPortable(t *testing.T) {
	if !detectFeatures().avx2 {
		t.Skip("no AVX2+FMA+F16C on this CPU")
	}
	simd, port := newKernels(cpuFeatures{avx2: true}), newKernels(cpuFeatures{})
	rng := rand.New(rand.NewPCG(20, 6))
	for _, qt := range moreAVX2Types {
		typ, form := quantTypes[qt].gguf, quantTypes[qt].form
		t.Run(typ.String(), func(t *testing.T) {
			for _, nb := range []int{1, 2, 3, 9} {
				const rows = 17
				k := nb * form.blockLen()
				rb := int(typ.RowSize(int64(k)))
				w := extremeQuantRows(t, rng, typ, rows, k)
				for xi, x := range extremeActs(rng, simd, form, k) {
					for n := 1; n <= rows; n++ {
						for _, r0 := range []int{0, rows - n} {
							rw := w[r0*rb : (r0+n)*rb]
							got, want := make([]float32, n+1), make([]float32, n)
							got[n] = float32(math.NaN())
							simd.quant[qt].rows(rw, x, got[:n])
							port.quant[qt].rows(rw, x, want)
							if !math.IsNaN(float64(got[n])) {
								t.Fatalf("%d blocks, %d rows: wrote %v past the last row", nb, n, got[n])
							}
							for i := range want {
								_, mag := quantDotReference(typ, form, rw[i*rb:(i+1)*rb], x)
								// Each kernel rounds nb block terms and sums
								// them (AVX2 in eight lanes, fused).
								if tol := float64(nb+16) * 0x1p-23 * mag; math.Abs(float64(got[i])-float64(want[i])) > tol {
									t.Fatalf("%d blocks, activations %d, rows %d…%d: row %d %v, portable %v (Σ|terms| %v)", nb, xi, r0, r0+n-1, r0+i, got[i], want[i], mag)
								}
							}
						}
					}
				}
			}
			// No blocks: the wrappers write zeros.
			out := []float32{1, 2, 3}
			simd.quant[qt].rows(nil, q8Blocks{}, out)
			if out[0] != 0 || out[1] != 0 || out[2] != 0 {
				t.Errorf("empty rows: %v, want zeros", out)
			}
		})
	}
}

// extremeF16 are the scales and mins the extreme blocks take: the largest
// finite fp16 of both signs, the smallest subnormals and normals, zeros
// of both signs and ordinary values.
var extremeF16 = []uint16{0x7bff, 0xfbff, 0x0001, 0x8001, 0x0400, 0x8400, 0x0000, 0x8000, 0x3c00, 0xb800, 0x2e66}

// extremeQuantRows is rows × k weights of typ, each block one of: the
// encoder's output for normal values, random bytes, all code bits clear,
// all set, or alternating; every block's fp16 fields (d, m, dmin) drawn
// from extremeF16 except the encoder's.
func extremeQuantRows(t *testing.T, rng *rand.Rand, typ gguf.Type, rows, k int) []byte {
	bs, ts := int(typ.BlockSize()), int(typ.TypeSize())
	f16At := map[gguf.Type][]int{
		gguf.TypeQ4_1: {0, 2}, gguf.TypeQ5_0: {0}, gguf.TypeQ5_1: {0, 2},
		gguf.TypeIQ4_NL: {0}, gguf.TypeQ2_K: {80, 82}, gguf.TypeQ3_K: {108},
	}[typ]
	out := make([]byte, 0, rows*k/bs*ts)
	x := make([]float32, bs)
	for range rows * k / bs {
		kind := rng.IntN(5)
		if kind == 0 {
			sd := math.Exp(3 * rng.NormFloat64())
			for i := range x {
				x[i] = float32(rng.NormFloat64() * sd)
			}
			b, err := gguf.Quantize(typ, x)
			must(t, err)
			out = append(out, b...)
			continue
		}
		blk := make([]byte, ts)
		for i := range blk {
			blk[i] = [...]byte{0, byte(rng.IntN(256)), 0x00, 0xff, 0x55 << (i % 2)}[kind]
		}
		for _, at := range f16At {
			binary.LittleEndian.PutUint16(blk[at:], extremeF16[rng.IntN(len(extremeF16))])
		}
		out = append(out, blk...)
	}
	return out
}

// extremeActs are activation rows of width k in form f: the quantizer's
// output for normal values and for ±1 (codes ±127), and made-up rows of
// codes all +127, all −127, and random ±127, with scales of both signs
// (Q8_K's d is negative where the largest element is positive).
func extremeActs(rng *rand.Rand, kern *kernels, f blockForm, k int) []q8Blocks {
	a := quantTestActs(kern, rng, 2, k)
	a.quantizeBlocks(f)
	out := []q8Blocks{a.blockRow(f, 0), a.blockRow(f, 1)}
	for _, code := range []func() int8{
		func() int8 { return 127 },
		func() int8 { return -127 },
		func() int8 { return int8(254*rng.IntN(2) - 127) },
	} {
		x := q8Blocks{q: make([]int8, k), d: make([]float32, k/f.blockLen()), sum: make([]int16, k/f.sumLen())}
		for i := range x.q {
			x.q[i] = code()
			x.sum[i/f.sumLen()] += int16(x.q[i])
		}
		for b := range x.d {
			x.d[b] = half.F16ToF32(half.F32ToF16(float32(rng.NormFloat64())))
		}
		out = append(out, x)
	}
	return out
}
