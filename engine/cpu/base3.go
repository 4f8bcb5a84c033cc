package cpu

// The "B3" layout: base-3 ternary rows at 1.6 bits per weight, for the
// kernels to read as they are instead of at I2's 2 bits. TQ1_0 rows whose
// blocks share one d (BitNet's per-tensor α) and .h1b v4 (tq1h) rows are
// rewritten into it at load at about their own size — a same-size
// repack: TQ1_0's 54-byte blocks lose their d, tq1h's bytes get another
// digit order and place, and grow by up to 51 bytes a row where K is not
// a multiple of 320 (see repackFor).
//
// A row is a run of 320-weight chunks of 64 bytes; byte i of chunk c holds
// the codes (w+1 ∈ 0..2) t0..t4 of weights 320c+64n+i, n = 0..4 — plane n
// of the chunk lines up with 64 contiguous activations. Where K is not a
// multiple of 320 the last chunk holds only (K mod 320)/64 planes (its
// other digits are 0), so a row takes ceil(K/320)·64 bytes: 512 at
// K = 2560 (tq1h: 512, TQ1_0: 540), 1408 at K = 6912 (1384, 1458).
//
// The digits are TQ1_0's fixed-point form: a byte is ceil(v·256/243) for
// v = Σ t_n·3^(4−n), so with c_0 = byte and c_{n+1} = 3·c_n mod 256, digit
// n is t_n = ⌊3·c_n/256⌋ — the top bits of a byte multiply, which SIMD code
// gets with a few byte operations. And since 3·c_n = 256·t_n + c_{n+1}
// exactly, Σ t_n·x = (3·Σ c_n·x − Σ c_{n+1}·x)/256: the VNNI kernel needs
// no digit extraction at all, only the byte sequence c_n and two
// unsigned-by-signed dot products per plane.
//
// Rows come in groups of four interleaved chunk by chunk as I2x4's blocks
// are (row 0's chunk 0, row 1's chunk 0, …, row 3's chunk 0, row 0's
// chunk 1, …): a decode kernel that multiplies a group reads one
// sequential stream (see repack.go). Row r's chunk c is at byte
// i2x4Offset(r, G) + 256c for G chunks a row, so row(r) is I2x4's.

const b3Chunk = 320 // weights per 64-byte chunk

// b3Planes is how many planes the chunk holding weights from w0 on has in
// a K-wide row.
func b3Planes(k, w0 int) int { return min(5, (k-w0)/64) }

// encodeB3 packs ternary weights w (K a multiple of 64) into one B3 row in
// plain chunk order (chunk c at 64c); interleaveI2 then places it.
func encodeB3(dst []byte, w []int8) {
	c := 0
	for ; (c+1)*b3Chunk <= len(w); c++ {
		x, out := (*[b3Chunk]int8)(w[c*b3Chunk:]), (*[64]byte)(dst[64*c:])
		for i := range out { // 121 = Σ 1·3^(4−n): the codes are w+1
			out[i] = b3Bytes[121+81*int(x[i])+27*int(x[64+i])+9*int(x[128+i])+3*int(x[192+i])+int(x[256+i])]
		}
	}
	if c*b3Chunk < len(w) {
		x, planes := w[c*b3Chunk:], b3Planes(len(w), c*b3Chunk)
		for i := range 64 {
			v := 0 // Σ t_n·3^(4−n), t_n = w+1 (0 past the last plane)
			for n := range 5 {
				v *= 3
				if n < planes {
					v += int(x[64*n+i]) + 1
				}
			}
			dst[64*c+i] = b3Bytes[v]
		}
	}
}

// b3Bytes[v] is the fixed-point byte ⌈v·256/243⌉ of the digits v.
var b3Bytes = func() (t [243]byte) {
	for v := range t {
		t[v] = byte((v*256 + 242) / 243)
	}
	return
}()

// b3DotGo returns Σ w·q over one B3 row (chunks 256 bytes apart, as
// row(r) gives them; total = Σq).
func b3DotGo(row []byte, q []int8, total int32) int32 {
	var s int32
	c := 0
	for ; (c+1)*b3Chunk <= len(q); c++ { // whole chunks: five planes
		blk := (*[64]byte)(row[256*c:])
		x := (*[b3Chunk]int8)(q[c*b3Chunk:])
		for i, b := range blk {
			t := &tq1Trits[b]
			s += int32(t[0])*int32(x[i]) + int32(t[1])*int32(x[64+i]) + int32(t[2])*int32(x[128+i]) +
				int32(t[3])*int32(x[192+i]) + int32(t[4])*int32(x[256+i])
		}
	}
	if x := q[c*b3Chunk:]; len(x) > 0 {
		for i, b := range row[256*c : 256*c+64] {
			t := &tq1Trits[b]
			for n := range len(x) / 64 {
				s += int32(t[n]) * int32(x[64*n+i])
			}
		}
	}
	return s - total
}

// readsB3 says the table has a B3 decode kernel, so base-3 matrices are
// kept at their own bit width (repackFor). Only the tables where B3 can
// pay have one (AVX-512 VNNI, NEON with SDOT; base3_amd64.go says why not
// AVX2). The portable table has none: in Go the digit lookups cost more
// than the bytes they save (B3 decoded 0.9–1.4 Gweights/s against I2's
// 1.4–1.5 on the 2-core Zen 4 VM); its B3 products, which only tests
// make, go one row at a time through dot.
func (k *kernels) readsB3() bool { return k.tern[typeB3].rows != nil }

// repackB3 returns l (TQ1_0 with one d per row, or tq1h) in the B3
// layout, or nil where it does not apply: other packings, K not a multiple
// of 256 (TQ1_0's blocks, and what the I2 fallback needs), or a row count
// that is not a multiple of four (B3 is interleaved by groups of four).
func repackB3(l *ternLinear, mem *arena) *ternLinear {
	if (l.kind != "TQ1_0" && l.kind != "tq1h") || l.c%256 != 0 || l.r%4 != 0 {
		return nil
	}
	scales := rowScales(l)
	if scales == nil {
		return nil
	}
	rb := rowBytesFor("B3", l.c)
	data := mem.alloc(l.r * rb)
	parallelRows(l.r, func(lo, hi int) {
		w := make([]int8, l.c)
		tmp := make([]byte, rb)
		for r := lo; r < hi; r++ {
			decodeRow(l.kind, l.data[r*l.rowBytes:(r+1)*l.rowBytes], w)
			encodeB3(tmp, w)
			interleaveI2(data, r, tmp)
		}
	})
	t := newTernary("B3", data, l.r, l.c, scales)
	t.owned, t.from = true, l.format()
	return t
}

// mulB3 is the product of a B3 matrix: the whole groups of four rows in
// [r0, r1) through the table's group kernels — four tokens at a time
// where it has dot4x4 (prefill), else one call of rows per token — and
// the rows outside them one dot at a time.
func (l *ternLinear) mulB3(out []float32, ldo int, a *acts, r0, r1 int) {
	k := a.k
	tk := &a.kern.tern[typeB3]
	g0, g1 := (r0+3)&^3, r1&^3
	if tk.rows == nil || g1 <= g0 {
		g0, g1 = r1, r1
	}
	t0 := 0 // tokens below t0 are done for rows [g0, g1)
	if tk.dot4x4 != nil && a.n >= 4 && g1 > g0 {
		t0 = l.mulB3Tiles(out, ldo, a, g0, g1)
	}
	for t := range a.n {
		q, total, xs := a.q[t*k:(t+1)*k], a.total[t], a.scale[t]
		o := out[t*ldo:]
		for r := r0; r < g0; r++ {
			o[r] = float32(tk.dot(l.row(r), q, total)) * l.rowScale[r] * xs
		}
		if g1 > g0 && t >= t0 {
			tk.rows(l.data[g0*l.rowBytes:g1*l.rowBytes], q, total, xs, l.rowScale[g0:g1], o[g0:g1])
		}
		for r := g1; r < r1; r++ {
			o[r] = float32(tk.dot(l.row(r), q, total)) * l.rowScale[r] * xs
		}
	}
}

// mulB3Tiles runs dot4x4 over the groups in [g0, g1) for every whole
// four tokens, tile by tile as mulI2Tiles does, and returns how many
// tokens it did.
func (l *ternLinear) mulB3Tiles(out []float32, ldo int, a *acts, g0, g1 int) int {
	k, rb := a.k, l.rowBytes
	dot4x4 := a.kern.tern[typeB3].dot4x4
	n4 := a.n &^ 3
	var s [16]int32 // row u's sum for token t+j in s[4u+j]
	for r := g0; r < g1; r += prefillTile {
		te := min(r+prefillTile, g1)
		for t := 0; t < n4; t += 4 {
			for i := r; i < te; i += 4 {
				dot4x4(l.data[i*rb:(i+4)*rb], a.q[t*k:(t+4)*k], k, a.total[t:t+4], &s)
				for u := range 4 {
					sc := l.rowScale[i+u]
					for j := range 4 {
						out[(t+j)*ldo+i+u] = float32(s[4*u+j]) * sc * a.scale[t+j]
					}
				}
			}
		}
	}
	return n4
}
