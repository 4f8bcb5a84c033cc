package cpu

import (
	"sync"
	"sync/atomic"
)

// Sherry by table lookup (the "sherryT" layout). A Sherry code is one of
// 32 patterns of four weights, so against one token a code's product
// with its four activations is one of 32 numbers: T_g[c] = Σ_p w_c[p]·q[4g+p]
// for each group g of four activations, built once per token and core
// (K/4 tables of 32 int16, |T| ≤ 381) and shared by every row. A row's
// dot is then
// Σ_g T_g[code(row, g)]: one table lookup per code instead of decoding it
// into four weights and multiplying them (sherry_kernels.go).
//
// The lookup that does it, VPERMW, takes one 32-entry table and 32 word
// indices, so the layout puts the codes of one group for 32 rows
// together: rows are cut into blocks of 32, and a block is 64-byte
// triples, triple k holding its rows' codes of groups 3k, 3k+1, 3k+2:
// qword j rows 4j…4j+3, group 3k+h's code of row 4j+i at bits 20h+5i. A
// VPMULTISHIFTQB per group moves the 32 codes to their word lanes, with
// no shuffle before the lookup. 60 of each 64 bits hold codes, so the
// layout takes 1.33 bits a weight against the file's 1.25 (groups padded
// to whole triples; rows past the matrix's last are zero codes, and so
// are the padding groups' tables). A block is one sequential stream of
// aligned loads; the kernel walks four blocks a quarter of the call
// apart, as the as-stored kernel walks its rows. On Zen 4 VPERMW runs
// beside the multiply pipes the as-stored kernel saturates: a row of 256
// weights from L2 in ~1.5 ns against 2.3 as stored (docs/engine.md,
// "Sherry by table lookup").
//
// Prefill takes the rows tile by tile (lutTile), each tile four tokens at
// a time where the table has rows4 (each triple loaded once for the
// four), the rest token by token.
//
// The load moves Sherry matrices to this layout where the kernel table
// has the kernels (kernels.sherryLUT: AVX-512 VBMI); the sums are the
// as-stored kernels' integers, so the logits are the same bit for bit.

// sherryLUTKernels are a table's kernels for the layout. tables writes the
// len(q)/4 groups' tables of one token into dst (32 each). rows writes
// out[i] = float32(Σ_g T_g[code(i, g)])·scale[i]·xs for the 32·nblk rows
// of the nblk blocks at blocks (tab: the token's tables).
type sherryLUTKernels struct {
	tables func(q []int8, dst []int16)
	rows   func(blocks []byte, tab []int16, nblk int, xs float32, scale, out []float32)
	// rows4, optional, is rows for four tokens at once (prefill): tabs
	// their four tables in turn, xs their scales, token t's outputs at
	// out[t·ldo:].
	rows4 func(blocks []byte, tabs []int16, nblk int, xs []float32, scale, out []float32, ldo int)
}

// lutBlock is the layout's row block: VPERMW's 32 word lanes.
const lutBlock = 32

// lutGroups is the groups of four a row of k holds, padded to whole
// triples (the layout's 64-byte units: three groups' codes of a block).
func lutGroups(k int) int { return (k/4 + 2) / 3 * 3 }

// lutBlockBytes is one block's bytes for k columns.
func lutBlockBytes(k int) int { return lutGroups(k) / 3 * 64 }

// repackSherryLUT moves Sherry matrix l to the lookup layout (nil where
// the table has no kernels for it or K is not whole groups of 32).
func repackSherryLUT(k *kernels, l *ternLinear, mem *arena) *ternLinear {
	if k.sherryLUT == nil || l.kind != "sherry" || l.c%32 != 0 || l.rowScale == nil {
		return nil
	}
	nblk := (l.r + lutBlock - 1) / lutBlock
	bb := lutBlockBytes(l.c)
	data := mem.alloc(nblk * bb)
	parallelRows(nblk, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			transposeSherryBlock(data[b*bb:(b+1)*bb], l, b)
		}
	})
	t := newTernary("sherryT", data, l.r, l.c, l.rowScale)
	t.owned, t.from = true, l.format()
	return t
}

// transposeSherryBlock writes block b of l (as stored) in the lookup
// layout into dst (zeroed).
func transposeSherryBlock(dst []byte, l *ternLinear, b int) {
	for r := range lutBlock {
		row := lutBlock*b + r
		if row >= l.r {
			break
		}
		src := l.data[row*l.rowBytes : (row+1)*l.rowBytes]
		for g := range l.c / 4 {
			// Triple g/3, qword r/4, bits 20·(g%3) + 5·(r%4).
			bit := 64*8*(g/3) + 64*(r/4) + 20*(g%3) + 5*(r%4)
			v := uint16(sherryCode(src, g)) << (bit % 8)
			dst[bit/8] |= byte(v)
			if v > 0xff {
				dst[bit/8+1] |= byte(v >> 8)
			}
		}
	}
}

// sherryCode is the 5-bit code of a Sherry row's group g of four weights.
func sherryCode(row []byte, g int) int {
	bit := 5 * g
	v := uint16(row[bit>>3])
	if bit>>3+1 < len(row) {
		v |= uint16(row[bit>>3+1]) << 8
	}
	return int(v >> (bit & 7) & 31)
}

// Each core builds the tables it reads, once per product, into a buffer
// of its own: built once by the caller and read by both cores, the next
// product's rewrite of the lines the other core had read went at ~18 ns
// a group (0.8 ms of a 12-layer token) against ~1 ns written locally.
// sync.Pool hands a core (its P) back the buffer it put; gen, drawn in
// prepare for each quantized batch, says whose tables a buffer holds.
type lutTables struct {
	gen uint64
	t   []int16
}

var (
	lutTablePool = sync.Pool{New: func() any { return new(lutTables) }}
	lutGen       atomic.Uint64
)

// sherryLUTPrepare marks a's quantized batch for the lookup products
// (prepare, before a product is dispatched).
func (a *acts) sherryLUTPrepare() {
	a.quantize()
	if !a.lutOK {
		a.lutOK, a.lutGen = true, lutGen.Add(1)
	}
}

// tablesFor returns this core's tables of a's n tokens (n·K/4·32) and the
// buffer to give back to lutTablePool.
func (a *acts) tablesFor(kl *sherryLUTKernels) ([]int16, *lutTables) {
	if !a.lutOK {
		panic("cpu: a Sherry lookup product without acts.prepare")
	}
	b := lutTablePool.Get().(*lutTables)
	g, gp := a.k/4, lutGroups(a.k)
	if b.gen != a.lutGen || len(b.t) != a.n*gp*32 {
		b.gen = a.lutGen
		b.t = grow(b.t, a.n*gp*32)
		for t := range a.n {
			tab := b.t[t*gp*32 : (t+1)*gp*32]
			kl.tables(a.q[t*a.k:t*a.k+4*g], tab[:g*32])
			clear(tab[g*32:]) // the padding groups' codes are 0: their table, too
		}
	}
	return b.t, b
}

// lutTile is how many rows a product takes per token before going on to
// the next (with several tokens: prefill): 256 rows, ~100–280 KB of
// codes at BitNet-2B's widths, stay in L2 for the next token.
const lutTile = 256

// mulSherryLUT is the product of a matrix in the lookup layout: for one
// token (decode) the whole range in one call, for several tile by tile
// (lutTile rows on its grid) and per token the tile; in each, the whole
// blocks in one kernel call and the blocks covered only in part (a chunk
// edge off the 32-row grid, or the matrix's short last block) through a
// copy.
func (l *ternLinear) mulSherryLUT(out []float32, ldo int, a *acts, r0, r1 int) {
	kl := a.kern.sherryLUT
	tabs, buf := a.tablesFor(kl)
	defer lutTablePool.Put(buf)
	g := lutGroups(l.c) // a token's tables: g·32
	if a.n == 1 {       // decode: the whole range in one call, four long streams
		l.lutRange(kl, tabs, a.scale[0], out[:l.r], r0, r1)
		return
	}
	for t0 := r0; t0 < r1; {
		t1 := min(r1, (t0/lutTile+1)*lutTile)
		t4 := 0 // tokens done four at a time, over the tile's whole blocks
		if b0, b1 := (t0+lutBlock-1)/lutBlock, t1/lutBlock; kl.rows4 != nil && b0 < b1 {
			bb := lutBlockBytes(l.c)
			for ; t4+4 <= a.n; t4 += 4 {
				kl.rows4(l.data[b0*bb:], tabs[t4*g*32:(t4+4)*g*32], b1-b0, a.scale[t4:t4+4],
					l.rowScale[b0*lutBlock:b1*lutBlock], out[t4*ldo+b0*lutBlock:], ldo)
				for t := t4; t < t4+4; t++ { // the blocks the tile covers in part
					o := out[t*ldo : t*ldo+l.r]
					if t0 < b0*lutBlock {
						l.lutPart(kl, tabs[t*g*32:(t+1)*g*32], a.scale[t], o, t0, b0*lutBlock)
					}
					if b1*lutBlock < t1 {
						l.lutPart(kl, tabs[t*g*32:(t+1)*g*32], a.scale[t], o, b1*lutBlock, t1)
					}
				}
			}
		}
		for t := t4; t < a.n; t++ {
			l.lutRange(kl, tabs[t*g*32:(t+1)*g*32], a.scale[t], out[t*ldo:t*ldo+l.r], t0, t1)
		}
		t0 = t1
	}
}

// lutRange computes rows [r0, r1) of one token.
func (l *ternLinear) lutRange(kl *sherryLUTKernels, tab []int16, xs float32, o []float32, r0, r1 int) {
	b0, b1 := (r0+lutBlock-1)/lutBlock, r1/lutBlock // whole blocks
	head := min(r1, b0*lutBlock)                    // [r0, head): in the block before b0
	if r0 < head {
		l.lutPart(kl, tab, xs, o, r0, head)
	}
	if b0 < b1 {
		kl.rows(l.data[b0*lutBlockBytes(l.c):], tab, b1-b0, xs, l.rowScale[b0*lutBlock:b1*lutBlock], o[b0*lutBlock:b1*lutBlock])
	}
	if tail := max(b1*lutBlock, head); tail < r1 { // in block b1
		l.lutPart(kl, tab, xs, o, tail, r1)
	}
}

// lutPart computes rows [r0, r1) of one block through a 32-row copy.
func (l *ternLinear) lutPart(kl *sherryLUTKernels, tab []int16, xs float32, o []float32, r0, r1 int) {
	b := r0 / lutBlock
	var scale, res [lutBlock]float32
	copy(scale[:], l.rowScale[b*lutBlock:min(l.r, (b+1)*lutBlock)])
	kl.rows(l.data[b*lutBlockBytes(l.c):], tab, 1, xs, scale[:], res[:])
	copy(o[r0:r1], res[r0-b*lutBlock:r1-b*lutBlock])
}
