package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
)

// quantExtremeRows is rows × k random blocks of typ whose fp16 scales
// (d, and dmin where the type has one) are the extremes: ±65504, the
// smallest subnormal, zero. The codes are random, so every bit pattern
// meets the largest scales.
func quantExtremeRows(rng *rand.Rand, typ gguf.Type, rows, k int) []byte {
	bs, ts := int(typ.BlockSize()), int(typ.TypeSize())
	out := make([]byte, rows*k/bs*ts)
	for i := range out {
		out[i] = byte(rng.IntN(256))
	}
	extremes := []uint16{0x7bff, 0xfbff, 0x0001, 0x8001, 0x0000, 0x3c00}
	var at []int // byte offsets of the fp16 scales within a block
	switch typ {
	case gguf.TypeQ4_K, gguf.TypeQ5_K:
		at = []int{0, 2}
	case gguf.TypeQ6_K:
		at = []int{208}
	case gguf.TypeQ2_K:
		at = []int{80, 82}
	case gguf.TypeQ3_K:
		at = []int{108}
	case gguf.TypeQ4_1, gguf.TypeQ5_1:
		at = []int{0, 2}
	default:
		at = []int{0}
	}
	for b := 0; b < len(out); b += ts {
		for _, o := range at {
			v := extremes[rng.IntN(len(extremes))]
			out[b+o], out[b+o+1] = byte(v), byte(v>>8)
		}
	}
	return out
}

// tileTestActs is quantTestActs with a zero row (token 2: zero scales,
// zero codes) when there are more than two.
func tileTestActs(kern *kernels, rng *rand.Rand, n, k int) *acts {
	a := quantTestActs(kern, rng, n, k)
	if n > 2 {
		clear(a.f[2*k : 3*k])
	}
	return a
}

// TestQuantTileKernelsMatchPortable checks every table's multi-token
// (prefill) kernel, called directly, against the portable one-token
// kernel token by token: random, quantized and extreme-scale blocks,
// row counts that are no multiple of anything, an output stride wider
// than the rows (whose gaps must stay untouched); to rounding, as
// TestQuantSIMDKernelsMatchPortable.
func TestQuantTileKernelsMatchPortable(t *testing.T) {
	sets := kernelSets()
	port := sets[0]
	rng := rand.New(rand.NewPCG(20, 6))
	tested := 0
	for _, kern := range sets[1:] {
		for qt := range numQuantTypes {
			qk := kern.quant[qt]
			if qk.rowsN == nil {
				continue
			}
			tested++
			typ, form := quantTypes[qt].gguf, quantTypes[qt].form
			t.Run(kern.name+"/"+typ.String(), func(t *testing.T) {
				widths := quantTestWidths(typ)
				if typ.BlockSize() == 32 {
					widths = append(widths, 256, 768) // whole super-blocks of eight blocks
				}
				for _, k := range widths {
					const rows = 23
					rb := int(typ.RowSize(int64(k)))
					w := append(quantTestRows(t, rng, typ, rows-7, k), quantExtremeRows(rng, typ, 7, k)...)
					g := qk.tokens
					a := tileTestActs(kern, rng, g, k)
					a.quantizeBlocks(form)
					ldo := rows + 5
					out := make([]float32, g*ldo)
					for i := range out {
						out[i] = -7
					}
					qk.rowsN(w, tileActs(a, form, 0, g), out[:(g-1)*ldo+rows], ldo)
					for tok := range g {
						x := a.blockRow(form, tok)
						for r := range ldo {
							got := out[tok*ldo+r]
							if r >= rows {
								if got != -7 {
									t.Fatalf("k %d: token %d wrote %v into the gap at %d", k, tok, got, r)
								}
								continue
							}
							var want [1]float32
							port.quant[qt].rows(w[r*rb:(r+1)*rb], x, want[:])
							_, mag := quantDotReference(typ, form, w[r*rb:(r+1)*rb], x)
							if math.Abs(float64(got-want[0])) > 2e-5*mag+1e-30 || math.IsNaN(float64(got)) {
								t.Fatalf("k %d token %d row %d: %s %v, portable %v (Σ|terms| %v)", k, tok, r, kern.name, got, want[0], mag)
							}
						}
					}
				}
			})
		}
	}
	if tested == 0 {
		t.Skip("no multi-token kernels on this CPU")
	}
}

// TestQuantPrefillMatchesTokenByToken multiplies batches of 2…13 tokens
// through quantLinear.mul (whole groups on the multi-token kernel, the
// rest one by one or as an overlapping group, rows in tiles, a row range
// that starts and ends inside a tile) and checks each token's outputs
// against the same table's decode product of that token alone, to
// rounding.
func TestQuantPrefillMatchesTokenByToken(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 7))
	for _, kern := range kernelSets() {
		for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ5_K, gguf.TypeQ4_0} {
			t.Run(kern.name+"/"+typ.String(), func(t *testing.T) {
				const rows, k = 85, 512
				l, err := newQuantLinear(quantTestRows(t, rng, typ, rows, k), typ, rows, k)
				must(t, err)
				r0, r1 := 3, 81
				for _, n := range []int{2, 4, 5, 7, 8, 9, 13} {
					a := tileTestActs(kern, rng, n, k)
					a.prepare(l)
					got := make([]float32, n*rows)
					l.mul(got, rows, a, r0, r1)
					one := &acts{kern: kern}
					for tok := range n {
						one.reset(1, k)
						copy(one.f, a.f[tok*k:(tok+1)*k])
						one.prepare(l)
						want := make([]float32, rows)
						l.mul(want, rows, one, r0, r1)
						for r := range rows {
							g := got[tok*rows+r]
							if r < r0 || r >= r1 {
								if g != 0 {
									t.Fatalf("%d tokens: token %d row %d outside [%d, %d) written: %v", n, tok, r, r0, r1, g)
								}
								continue
							}
							_, mag := quantDotReference(typ, l.form, l.raw[r*l.rowBytes:(r+1)*l.rowBytes], one.blockRow(l.form, 0))
							if math.Abs(float64(g-want[r])) > 2e-5*mag+1e-30 {
								t.Fatalf("%d tokens: token %d row %d: batch %v, alone %v", n, tok, r, g, want[r])
							}
						}
					}
				}
			})
		}
	}
}

// TestQuantPrefillMatchesDecodeOnFixtures runs llama-quantize's files
// (Q4_K_M: Q4_K and Q6_K matrices; Q8_0; Q4_0; Q6_K) with every kernel
// table: a
// prompt prefilled in one batch (whole token groups on the multi-token
// kernels, the rest one by one) must give the same greedy continuation
// as the prompt fed one token at a time (the one-token kernels), and
// nearly the same last-position logits. Nearly, not to rounding: every
// product input is requantized to int8, which absorbs the kernels'
// last-bit differences (the Q8_0 file's logits come out identical) except
// where one lands an activation on the other side of a rounding step;
// one such flip moves the Q4_K_M file's logits by 0.18 of 19.5 here.
func TestQuantPrefillMatchesDecodeOnFixtures(t *testing.T) {
	const prompt = "Once upon a time, there was a little dog named Max. Max liked to run in the big green park with his best friend, a cat called Tom, every day."
	ctx := context.Background()
	for _, file := range []string{"tinystories256-Q4_K_M.gguf", "tinystories-Q8_0.gguf", "tinystories-Q4_0.gguf", "tinystories256-Q6_K.gguf"} {
		path := filepath.Join(ggufQuantFixtures, file)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("llama.cpp quantized fixtures absent (../shared): %v", err)
		}
		m := loadModel(t, path)
		ids := m.tok.Encode(prompt, true)
		if len(ids) < 19 {
			t.Fatalf("%d prompt tokens: want two groups of eight and some over", len(ids))
		}
		for _, kern := range kernelSets() {
			t.Run(file+"/"+kern.name, func(t *testing.T) {
				batch, single := newState(m), newState(m)
				for _, s := range []*state{batch, single} {
					s.a.kern, s.b.kern = kern, kern
				}
				lb, err := batch.forward(ctx, ids)
				must(t, err)
				lb = slices.Clone(lb)
				var ls []float32
				for _, id := range ids {
					ls, err = single.forward(ctx, []int{id})
					must(t, err)
				}
				var diff, scale float64
				for i := range lb {
					diff = max(diff, math.Abs(float64(lb[i]-ls[i])))
					scale = max(scale, math.Abs(float64(ls[i])))
				}
				t.Logf("%d tokens: logits differ by at most %.3g (largest %.3g)", len(ids), diff, scale)
				if diff > 0.02*scale {
					t.Errorf("batch and token-by-token logits differ by %g (largest logit %g)", diff, scale)
				}
				gb, gs := greedyIDs(t, batch, lb, 24), greedyIDs(t, single, ls, 24)
				if !slices.Equal(gb, gs) {
					t.Errorf("greedy continuations differ:\nbatch  %v\nsingle %v", gb, gs)
				}
			})
		}
	}
}

// greedyIDs continues s greedily for n tokens from logits.
func greedyIDs(t *testing.T, s *state, logits []float32, n int) []int {
	var out []int
	for range n {
		id := 0
		for i, v := range logits {
			if v > logits[id] {
				id = i
			}
		}
		out = append(out, id)
		var err error
		logits, err = s.forward(context.Background(), []int{id})
		must(t, err)
	}
	return out
}

// The prefill products of one FFN-sized matrix (4864 × 1024) with 64
// tokens, the shape BenchmarkKernelQ4_Kx64 times for Q4_K.
func BenchmarkKernelQ8_0x64(b *testing.B) { benchQuantKernel(b, gguf.TypeQ8_0, 4864, 1024, 64) }
func BenchmarkKernelQ6_Kx64(b *testing.B) { benchQuantKernel(b, gguf.TypeQ6_K, 4864, 1024, 64) }

// BenchmarkTileKernels times one core's kernels on a 64-row tile of K =
// 1024 and 4096 (from L1/L2, as prefill reads it) against 64 tokens: the
// one-token rows kernel per token, and the multi-token rowsN; ns/256w is
// per 256 weights and token (cpu-ns/256w in CPU time, steadier on a
// shared host).
func BenchmarkTileKernels(b *testing.B) {
	kern := hostKernels(b)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		for _, k := range []int{1024, 4096} {
			const rows, n = 64, 64
			qt, _ := quantTypeOf(typ)
			x := make([]float32, rows*k)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			raw, err := gguf.Quantize(typ, x)
			if err != nil {
				b.Fatal(err)
			}
			l, err := newQuantLinear(raw, typ, rows, k)
			if err != nil {
				b.Fatal(err)
			}
			a := newActs(kern, rng, n, k)
			a.prepare(l)
			out := make([]float32, n*rows)
			for _, name := range []string{"rows", "rowsN"} {
				qk := kern.quant[qt]
				if name == "rows" {
					qk.rowsN = nil
				} else if qk.rowsN == nil {
					continue
				}
				b.Run(fmt.Sprintf("%s/K%d/%s", typ, k, name), func(b *testing.B) {
					cpu0 := cpuTime()
					for range b.N {
						if qk.rowsN == nil {
							for t := range n {
								qk.rows(l.raw, a.blockRow(l.form, t), out[t*rows:(t+1)*rows])
							}
							continue
						}
						for t := 0; t < n; t += qk.tokens {
							qk.rowsN(l.raw, tileActs(a, l.form, t, t+qk.tokens), out[t*rows:(t+qk.tokens-1)*rows+rows], rows)
						}
					}
					per := float64(b.N * rows * n * k / 256)
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/256w")
					b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/per, "cpu-ns/256w")
				})
			}
		}
	}
}
