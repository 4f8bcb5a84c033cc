package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestQuantTileKernelsStayInBounds is TestQuantKernelsStayInBounds for the
// multi-token (rowsN) kernels: weights, the token group's codes, scales
// and sums, and the output each end where an unreadable page begins, at
// widths that take the Q8_0 and Q4_0 kernels' packed path (whole
// super-blocks of eight blocks) and their four-token fallback.
func TestQuantTileKernelsStayInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 8))
	sets := kernelSets()
	for _, kern := range sets[1:] {
		for qt := range numQuantTypes {
			qk := kern.quant[qt]
			if qk.rowsN == nil {
				continue
			}
			typ, form := quantTypes[qt].gguf, quantTypes[qt].form
			t.Run(kern.name+"/"+typ.String(), func(t *testing.T) {
				for _, k := range []int{3 * form.blockLen(), 256 * max(1, form.blockLen()/32)} {
					const rows = 3
					g := qk.tokens
					nb, ns := k/form.blockLen(), k/form.sumLen()
					w := guardedBytes(t, int(typ.RowSize(int64(k)))*rows)
					copy(w, quantTestRows(t, rng, typ, rows, k))
					a := quantTestActs(kern, rng, g, k)
					a.quantizeBlocks(form)
					src := tileActs(a, form, 0, g)
					x := q8Blocks{
						q:   unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(guardedBytes(t, g*k)))), g*k),
						d:   unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(guardedBytes(t, 4*g*nb)))), g*nb),
						sum: unsafe.Slice((*int16)(unsafe.Pointer(unsafe.SliceData(guardedBytes(t, 2*g*ns)))), g*ns),
					}
					copy(x.q, src.q)
					copy(x.d, src.d)
					copy(x.sum, src.sum)
					ldo := rows + 1
					n := (g-1)*ldo + rows
					out := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(guardedBytes(t, 4*n)))), n)
					qk.rowsN(w, x, out, ldo)
					rb := len(w) / rows
					for tok := range g {
						var want [rows]float32
						sets[0].quant[qt].rows(w, a.blockRow(form, tok), want[:])
						for i := range rows {
							_, mag := quantDotReference(typ, form, w[i*rb:(i+1)*rb], a.blockRow(form, tok))
							if got := out[tok*ldo+i]; math.Abs(float64(got-want[i])) > 2e-5*mag+1e-30 {
								t.Errorf("k %d token %d row %d: %v, portable %v", k, tok, i, got, want[i])
							}
						}
					}
				}
			})
		}
	}
}
