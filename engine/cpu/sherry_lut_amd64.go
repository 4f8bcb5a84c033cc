//go:build !purego

package cpu

import (
	"encoding/binary"
	"unsafe"
)

//go:noescape
func sherryLUTTablesVNNI(q *int8, groups int, dst *int16, c *[5][64]byte)

//go:noescape
func sherryLUTRows4VBMI(blocks *byte, tab *int16, tstride int, triples int, nblk int, xs *float32, scale *float32, out *float32, ldo int, acc *int32, c *[3][64]byte)

//go:noescape
func sherryLUTRowsVBMI(blocks *byte, tab *int16, triples int, nblk int, xs float32, scale *float32, out *float32, c *[3][64]byte)

// sherryLUTTableConsts are sherryLUTTablesVNNI's vectors: the codes'
// signed weights (dword 4L+i: code 8L+i, then code 8L+4+i), −128·Σw of
// the same codes, and 0x80 bytes.
var sherryLUTTableConsts = func() (c [5][64]byte) {
	for d := range 16 {
		L, i := d/4, d%4
		for h, code := range [2]int{8*L + i, 8*L + 4 + i} {
			var sum int32
			for p, w := range sherryWeights[code] {
				c[h][4*d+p] = byte(w)
				sum += int32(w)
			}
			binary.LittleEndian.PutUint32(c[2+h][4*d:], uint32(-128*sum))
		}
	}
	for i := range c[4] {
		c[4][i] = 0x80
	}
	return
}()

// sherryLUTRowConsts are the lookup kernels' multishift controls: with
// control h, word i of each qword (4j+i of the block) takes bits 20h+5i
// (group 3k+h's code of row 4j+i in the block's triple k).
var sherryLUTRowConsts = func() (c [3][64]byte) {
	for h := range 3 {
		for j := range 8 {
			for i := range 4 {
				c[h][8*j+2*i], c[h][8*j+2*i+1] = byte(20*h+5*i), byte(20*h+5*i)
			}
		}
	}
	return
}()

// useSherryLUT puts the lookup layout's kernels into k (useSherry calls
// it where the AVX-512 VBMI Sherry kernels are).
func useSherryLUT(k *kernels) {
	k.sherryLUT = &sherryLUTKernels{
		tables: func(q []int8, dst []int16) {
			g := len(q) / 4
			if g == 0 {
				return
			}
			_ = dst[32*g-1]
			sherryLUTTablesVNNI(unsafe.SliceData(q), g, unsafe.SliceData(dst), &sherryLUTTableConsts)
		},
		rows: func(blocks []byte, tab []int16, nblk int, xs float32, scale, out []float32) {
			tr := len(tab) / 96 // triples: the tables are padded to whole ones
			if nblk == 0 {
				return
			}
			_ = blocks[nblk*64*tr-1]
			_ = scale[nblk*lutBlock-1]
			_ = out[nblk*lutBlock-1]
			sherryLUTRowsVBMI(unsafe.SliceData(blocks), unsafe.SliceData(tab), tr, nblk, xs, unsafe.SliceData(scale), unsafe.SliceData(out), &sherryLUTRowConsts)
		},
		rows4: func(blocks []byte, tabs []int16, nblk int, xs []float32, scale, out []float32, ldo int) {
			tr := len(tabs) / 384
			if nblk == 0 {
				return
			}
			_ = blocks[nblk*64*tr-1]
			_ = xs[3]
			_ = scale[nblk*lutBlock-1]
			_ = out[3*ldo+nblk*lutBlock-1]
			var acc [lutTile / lutBlock * 4 * lutBlock]int32 // a tile's sums
			for b := 0; b < nblk; b += lutTile / lutBlock {
				n := min(nblk-b, lutTile/lutBlock)
				sherryLUTRows4VBMI(&blocks[b*64*tr], unsafe.SliceData(tabs), 192*tr, tr, n, &xs[0],
					&scale[b*lutBlock], &out[b*lutBlock], 4*ldo, &acc[0], &sherryLUTRowConsts)
			}
		},
	}
}
