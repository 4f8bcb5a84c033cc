package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestQuantKernelsStayInBounds runs every table's rows kernel of every
// block type on weights, activation codes, scales and sums that each end
// where an unreadable page begins: a kernel that loads past its last
// block (a wide load of the fp16 scale at the end of a Q2_K or Q3_K
// block, say) faults here instead of reading the next tensor's bytes — or
// past the end of a mapping, in a model.
func TestQuantKernelsStayInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 7))
	sets := kernelSets()
	for _, kern := range sets {
		for qt := range numQuantTypes {
			typ, form := quantTypes[qt].gguf, quantTypes[qt].form
			t.Run(kern.name+"/"+typ.String(), func(t *testing.T) {
				const rows = 3
				k := 3 * form.blockLen()
				nb, ns := k/form.blockLen(), k/form.sumLen()
				w := guardedBytes(t, int(typ.RowSize(int64(k)))*rows)
				copy(w, quantTestRows(t, rng, typ, rows, k))
				a := quantTestActs(kern, rng, 1, k)
				a.quantizeBlocks(form)
				src := a.blockRow(form, 0)
				x := q8Blocks{
					q:   unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(guardedBytes(t, k)))), k),
					d:   unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(guardedBytes(t, 4*nb)))), nb),
					sum: unsafe.Slice((*int16)(unsafe.Pointer(unsafe.SliceData(guardedBytes(t, 2*ns)))), ns),
				}
				copy(x.q, src.q)
				copy(x.d, src.d)
				copy(x.sum, src.sum)
				got, want := make([]float32, rows), make([]float32, rows)
				kern.quant[qt].rows(w, x, got)
				sets[0].quant[qt].rows(w, src, want)
				rb := len(w) / rows
				for i := range got {
					_, mag := quantDotReference(typ, form, w[i*rb:(i+1)*rb], src)
					if math.Abs(float64(got[i]-want[i])) > 2e-5*mag+1e-30 {
						t.Errorf("row %d: %v, portable %v", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// guardedBytes is n bytes of fresh memory that end where a PROT_NONE
// page begins.
func guardedBytes(t *testing.T, n int) []byte {
	page := unix.Getpagesize()
	size := (n+page-1)/page*page + page
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	must(t, err)
	t.Cleanup(func() { unix.Munmap(b) })
	must(t, unix.Mprotect(b[size-page:], unix.PROT_NONE))
	return b[size-page-n : size-page : size-page]
}
