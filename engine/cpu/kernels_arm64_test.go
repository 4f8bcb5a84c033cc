//go:build !purego

package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/half"
)

// arm64Variants are the NEON kernel tables this CPU can run: the ARMv8.0
// one always, the SDOT one where the dot-product extension is present.
func arm64Variants(t *testing.T) []*kernels {
	v := kernelSets()[1:]
	if !cpu.ARM64.HasASIMDDP {
		t.Log("no asimddp on this CPU: SDOT kernels not run")
	}
	return v
}

// i2Rows runs kern's I2 rows kernel without the scaling epilogue: the
// exact Σ c·q of each row into out.
func i2Rows(kern *kernels, rows []byte, q []int8, out []int32) {
	nb := len(q) / 256
	if len(out) == 0 {
		return
	}
	if nb == 0 {
		clear(out)
		return
	}
	_ = rows[len(out)*nb*i2Block-1]
	i2RowsARM64(kern.name == "neon-dotprod", nb)(unsafe.SliceData(rows), unsafe.SliceData(q), nb, len(out), 0, 0, nil, unsafe.Pointer(unsafe.SliceData(out)))
}

// randQ fills q with random int8s, every tenth one an extreme (±127, −128).
func randQ(rng *rand.Rand, q []int8) {
	ext := [...]int8{127, -127, -128}
	for i := range q {
		if rng.IntN(10) == 0 {
			q[i] = ext[rng.IntN(len(ext))]
		} else {
			q[i] = int8(rng.IntN(256))
		}
	}
}

// TestARM64I2Kernels checks the I2 row kernels bit for bit against
// i2DotGo: row counts around the 4-row groups, 1..30 blocks, random bytes
// (code 3 included, which the portable kernel also multiplies), extreme
// activations, and the all-maximal case (every code 2, every q −128 / 127).
func TestARM64I2Kernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kern := range arm64Variants(t) {
		for nb := 1; nb <= 30; nb++ {
			k := nb * 256
			nrows := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 13}[nb%10]
			rows := make([]byte, nrows*nb*i2Block)
			for i := range rows {
				rows[i] = byte(rng.IntN(256))
			}
			q := make([]int8, 4*k)
			randQ(rng, q)
			switch nb {
			case 29: // the largest magnitudes the types allow
				for i := range rows {
					rows[i] = 0xaa
				}
				for i := range q {
					q[i] = -128
				}
			case 30:
				for i := range rows {
					rows[i] = 0xff // code 3 everywhere
				}
				for i := range q {
					q[i] = 127
				}
			}
			checkI2(t, kern, rows, q, nb, nrows, rng)
		}
	}
}

// TestARM64I2LongRows: past i2MaxBlocksSDOT the SDOT set hands rows to the
// ARMv8.0 kernel; the largest sums (codes 3, q −128) stay exact.
func TestARM64I2LongRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	nb := i2MaxBlocksSDOT + 1
	rows := make([]byte, 5*nb*i2Block)
	for i := range rows {
		rows[i] = 0xff
	}
	q := make([]int8, 4*nb*256)
	for i := range q {
		q[i] = -128
	}
	for _, kern := range arm64Variants(t) {
		checkI2(t, kern, rows, q, nb, 5, rng)
	}
}

func checkI2(t *testing.T, kern *kernels, rows []byte, q []int8, nb, nrows int, rng *rand.Rand) {
	t.Helper()
	i2 := &kern.tern[typeI2]
	k, rb := nb*256, nb*i2Block
	totals := make([]int32, 4)
	for tk := range 4 {
		for _, v := range q[tk*k : (tk+1)*k] {
			totals[tk] += int32(v)
		}
	}
	q0 := q[:k]
	out := make([]int32, nrows)
	i2Rows(kern, rows, q0, out)
	scale := make([]float32, nrows)
	for r := range scale {
		scale[r] = float32(rng.Float64()*2 + 0.001)
	}
	xs := float32(rng.Float64() * 0.05)
	got := make([]float32, nrows)
	i2.rows(rows, q0, totals[0], xs, scale, got)
	for r := range nrows {
		row := rows[r*rb : (r+1)*rb]
		want := i2DotGo(row, q0, 0)
		if out[r] != want {
			t.Fatalf("%s i2Rows nb %d rows %d row %d: %d, want %d", kern.name, nb, nrows, r, out[r], want)
		}
		ws := float32(want-totals[0]) * scale[r] * xs
		if math.Float32bits(got[r]) != math.Float32bits(ws) {
			t.Fatalf("%s i2RowsScaled nb %d rows %d row %d: %v, want %v", kern.name, nb, nrows, r, got[r], ws)
		}
		if d := i2.dot(row, q0, totals[0]); d != want-totals[0] {
			t.Fatalf("%s i2Dot nb %d row %d: %d, want %d", kern.name, nb, r, d, want-totals[0])
		}
	}
	var four [4]int32
	row := rows[:rb]
	i2.dot4(row, q, k, totals, &four)
	for tk := range 4 {
		if want := i2DotGo(row, q[tk*k:(tk+1)*k], totals[tk]); four[tk] != want {
			t.Fatalf("%s i2Dot4 nb %d token %d: %d, want %d", kern.name, nb, tk, four[tk], want)
		}
	}
}

// TestARM64TQ2: TQ2_0 rows (per-block fp16 scales) against tq2DotGo, bit
// for bit: the integer block sums are exact and combined as the portable
// kernel does.
func TestARM64TQ2(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, kern := range arm64Variants(t) {
		for _, nb := range []int{1, 2, 3, 10, 27, 70} { // 70: past the stack buffer
			row := make([]byte, nb*tq2Block)
			for i := range row {
				row[i] = byte(rng.IntN(256))
			}
			for b := range nb { // a sane fp16 scale in each block
				row[b*tq2Block+64], row[b*tq2Block+65] = byte(rng.IntN(256)), byte(0x20+rng.IntN(16))
			}
			q := make([]int8, nb*256)
			randQ(rng, q)
			bsum := make([]int32, nb)
			for b := range nb {
				for _, v := range q[b*256 : (b+1)*256] {
					bsum[b] += int32(v)
				}
			}
			if g, s := tq2DotGo(row, q, bsum), kern.tern[typeTQ2].blockDot(row, q, bsum); math.Float32bits(g) != math.Float32bits(s) {
				t.Fatalf("%s tq2Dot nb %d: %v, want %v", kern.name, nb, s, g)
			}
		}
	}
}

// TestARM64Q8Dot: the int8 head's dot over odd lengths and −128s.
func TestARM64Q8Dot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, kern := range arm64Variants(t) {
		for _, n := range []int{0, 1, 15, 16, 17, 63, 64, 65, 100, 127, 129, 2560, 2601} {
			w, x := make([]int8, n), make([]int8, n+3)
			randQ(rng, w)
			randQ(rng, x)
			if g, s := q8DotGo(w, x[:n]), kern.q8.dot(w, x); g != s {
				t.Fatalf("%s q8Dot n %d: %d, want %d", kern.name, n, s, g)
			}
			for i := range w { // −128·−128 everywhere: int16 products at their limit
				w[i], x[i] = -128, -128
			}
			if g, s := q8DotGo(w, x[:n]), kern.q8.dot(w, x); g != s {
				t.Fatalf("%s q8Dot all −128 n %d: %d, want %d", kern.name, n, s, g)
			}
		}
	}
}

// TestARM64FloatKernels: float dots and axpy to rounding, readSum, absMax
// and the activation quantizer exactly.
func TestARM64FloatKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 7, 16, 31, 32, 100, 2560, 2567} {
		x, y := make([]float32, n), make([]float32, n)
		h := make([]byte, 2*n)
		for i := range x {
			x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			h[2*i], h[2*i+1] = byte(rng.IntN(256)), byte(rng.IntN(256))&^0x40 // finite, some subnormal
		}
		ya, yb := append([]float32(nil), y...), append([]float32(nil), y...)
		axpyF32Go(0.3, x, ya)
		axpyF32ARM64(0.3, x, yb)
		for i := range ya {
			if abs32(ya[i]-yb[i]) > 1e-6*max(1, abs32(ya[i])) {
				t.Fatalf("axpy n %d [%d]: %v vs %v", n, i, ya[i], yb[i])
			}
		}
		if g, s := dotF32Go(x, y), dotF32ARM64(x, y); abs32(g-s) > 1e-5*float32(n) {
			t.Errorf("dotF32 n %d: %v vs %v", n, g, s)
		}
		var mag float32 // Σ|w·x|: the rounding scale of the f16 dot
		for i := range x {
			mag += abs32(f16Table[binary.LittleEndian.Uint16(h[2*i:])] * y[i])
		}
		if g, s := dotF16Go(h, y), dotF16ARM64(h, y); abs32(g-s) > 1e-5*max(1, mag) {
			t.Errorf("dotF16 n %d: %v vs %v", n, g, s)
		}
	}
	for _, n := range []int{0, 5, 128, 1000, 4096 + 77} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		var want uint64
		m := n &^ 127
		for i := 0; i < m; i += 8 {
			want ^= binary.LittleEndian.Uint64(b[i:])
		}
		want += readSumGo(b[m:])
		if got := readSumARM64(b); got != want {
			t.Fatalf("readSum n %d: %#x, want %#x", n, got, want)
		}
	}
	for _, nb := range []int{1, 2, 5, 27} {
		x := quantTestValues(rng, nb*256+9)
		x[3], x[len(x)-1] = -130, 131
		if g, s := absMaxGo(x), absMaxARM64(x); g != s {
			t.Fatalf("absMax nb %d: portable %v, neon %v", nb, g, s)
		}
		for _, inv := range []float32{1, 0.37, 127 / absMaxGo(x), 3.3e7} {
			for _, short := range []int{0, 9} { // a short last block goes to Go
				xx := x[:nb*256+short]
				nbk := nb + min(short, 1)
				qg, qs := make([]int8, len(xx)), make([]int8, len(xx))
				pg, ps := make([]int8, len(xx)), make([]int8, len(xx))
				bg, bs := make([]int32, nbk), make([]int32, nbk)
				quantBlocksGo(xx, inv, qg, pg, bg)
				quantBlocksARM64(xx, inv, qs, ps, bs)
				for i := range qg {
					if qg[i] != qs[i] || pg[i] != ps[i] {
						t.Fatalf("quantBlocks nb %d inv %v: x[%d]=%v → portable %d (permuted %d), neon %d (%d)", nb, inv, i, xx[i], qg[i], pg[i], qs[i], ps[i])
					}
				}
				for b := range bg {
					if bg[b] != bs[b] {
						t.Fatalf("quantBlocks nb %d inv %v block %d: portable sum %d, neon %d", nb, inv, b, bg[b], bs[b])
					}
				}
			}
		}
	}
	// Infinities and NaN quantize as the Go conversion does on arm64.
	x := make([]float32, 256)
	x[0], x[1], x[2] = float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())
	x[3], x[4] = 3e9, -3e9
	qg, qs := make([]int8, 256), make([]int8, 256)
	bg, bs := make([]int32, 1), make([]int32, 1)
	quantBlocksGo(x, 1, qg, nil, bg)
	quantBlocksARM64(x, 1, qs, nil, bs)
	if string(unsafeBytes(qg)) != string(unsafeBytes(qs)) || bg[0] != bs[0] {
		t.Fatalf("quantBlocks of ±Inf, NaN, ±3e9: portable %v (Σ %d), neon %v (Σ %d)", qg[:5], bg[0], qs[:5], bs[0])
	}
	if m := absMaxARM64(x[:32]); !math.IsNaN(float64(m)) {
		t.Fatalf("absMax with a NaN: %v, want NaN as absMaxGo gives (%v)", m, absMaxGo(x[:32]))
	}
}

// TestARM64Attention: one head of headDim 128 over n positions stride
// floats apart (a second kv head at an offset), against dotF32Go and
// axpyF32Go.
func TestARM64Attention(t *testing.T) {
	checkAttention128(t, rand.New(rand.NewPCG(13, 14)), attnScoresARM64, attnMixARM64)
}

// TestARM64Dispatch: a model loads with the table the CPU and the
// environment select.
func TestARM64Dispatch(t *testing.T) {
	set, err := newSettings(engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kern := set.kernels()
	switch {
	case set.pureGo:
		if kern.name != "go" || kern.tern[typeI2].rows != nil || kern.tern[typeI2].dot4 != nil {
			t.Fatalf("EDGECTL_PUREGO=1 but kernels %q (i2 rows set: %v)", kern.name, kern.tern[typeI2].rows != nil)
		}
	case cpu.ARM64.HasASIMDDP && !set.noDotProd:
		if kern.name != "neon-dotprod" {
			t.Fatalf("SDOT CPU runs %q", kern.name)
		}
	default:
		if kern.name != "neon" || kern.tern[typeI2].rows == nil {
			t.Fatalf("kernels %q without SDOT", kern.name)
		}
	}
	if !set.pureGo && (kern.q8.rows == nil || kern.q8.unsigned) {
		t.Fatalf("kernels %q: the signed q8 rows head kernel is not selected", kern.name)
	}
	t.Logf("kernels %s (asimddp %v)", kern.name, cpu.ARM64.HasASIMDDP)
}

// TestARM64Encodings runs each WORD-encoded instruction once (neonProbe)
// on random registers against a Go model of what the Arm ARM says it does.
func TestARM64Encodings(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	type vec = [16]byte
	s32 := func(v *vec, i int) int32 { return int32(binary.LittleEndian.Uint32(v[4*i:])) }
	f32 := func(v *vec, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:])) }
	s16 := func(v *vec, i int) int16 { return int16(binary.LittleEndian.Uint16(v[2*i:])) }
	put32 := func(v *vec, i int, x uint32) { binary.LittleEndian.PutUint32(v[4*i:], x) }
	put16 := func(v *vec, i int, x uint16) { binary.LittleEndian.PutUint16(v[2*i:], x) }
	randFloat := func() float32 {
		switch rng.IntN(6) {
		case 0:
			return float32(rng.IntN(400)-200) + 0.5 // rounding ties
		case 1:
			return float32(rng.NormFloat64() * 3e9) // beyond int32
		case 2:
			return float32(math.Inf(2*rng.IntN(2) - 1))
		case 3:
			return float32(rng.IntN(1<<20) - 1<<19)
		}
		return float32(rng.NormFloat64() * 100)
	}
	saturate := func(r float64) uint32 { // int32 conversion as FCVT*S: saturating, NaN → 0
		switch {
		case r != r:
			return 0
		case r >= 1<<31:
			return math.MaxInt32
		case r < -(1 << 31):
			return 1 << 31
		}
		return uint32(int32(r))
	}
	roundAway := func(f float32) uint32 { return saturate(math.Round(float64(f))) }       // FCVTAS: ties away
	roundEven := func(f float32) uint32 { return saturate(math.RoundToEven(float64(f))) } // FCVTNS: ties to even
	type op struct {
		name  string
		float bool // d, n, m hold float32 lanes
		half  bool // n holds finite binary16 values
		model func(d, n, m *vec) vec
	}
	ops := []op{
		{name: "sdot", model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				s := s32(d, i)
				for j := range 4 {
					s += int32(int8(n[4*i+j])) * int32(int8(m[4*i+j]))
				}
				put32(&r, i, uint32(s))
			}
			return
		}},
		{name: "smull", model: func(d, n, m *vec) (r vec) {
			for i := range 8 {
				put16(&r, i, uint16(int16(int8(n[i]))*int16(int8(m[i]))))
			}
			return
		}},
		{name: "smull2", model: func(d, n, m *vec) (r vec) {
			for i := range 8 {
				put16(&r, i, uint16(int16(int8(n[8+i]))*int16(int8(m[8+i]))))
			}
			return
		}},
		{name: "smlal", model: func(d, n, m *vec) (r vec) {
			for i := range 8 {
				put16(&r, i, uint16(s16(d, i)+int16(int8(n[i]))*int16(int8(m[i]))))
			}
			return
		}},
		{name: "smlal2", model: func(d, n, m *vec) (r vec) {
			for i := range 8 {
				put16(&r, i, uint16(s16(d, i)+int16(int8(n[8+i]))*int16(int8(m[8+i]))))
			}
			return
		}},
		{name: "sadalp", model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, uint32(s32(d, i)+int32(s16(n, 2*i))+int32(s16(n, 2*i+1))))
			}
			return
		}},
		{name: "ssra #2", model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, uint32(s32(d, i)+s32(n, i)>>2))
			}
			return
		}},
		{name: "ssra #4", model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, uint32(s32(d, i)+s32(n, i)>>4))
			}
			return
		}},
		{name: "scvtf", model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, math.Float32bits(float32(s32(n, i))))
			}
			return
		}},
		{name: "fmul", float: true, model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, math.Float32bits(f32(n, i)*f32(m, i)))
			}
			return
		}},
		{name: "fadd", float: true, model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, math.Float32bits(f32(n, i)+f32(m, i)))
			}
			return
		}},
		{name: "faddp", float: true, model: func(d, n, m *vec) (r vec) {
			put32(&r, 0, math.Float32bits(f32(n, 0)+f32(n, 1)))
			put32(&r, 1, math.Float32bits(f32(n, 2)+f32(n, 3)))
			put32(&r, 2, math.Float32bits(f32(m, 0)+f32(m, 1)))
			put32(&r, 3, math.Float32bits(f32(m, 2)+f32(m, 3)))
			return
		}},
		{name: "fcvtl", half: true, model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, math.Float32bits(half.F16ToF32(uint16(s16(n, i)))))
			}
			return
		}},
		{name: "fcvtl2", half: true, model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, math.Float32bits(half.F16ToF32(uint16(s16(n, 4+i)))))
			}
			return
		}},
		{name: "fcvtas", float: true, model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, roundAway(f32(n, i)))
			}
			return
		}},
		{name: "fabs", float: true, model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, math.Float32bits(f32(n, i))&^(1<<31))
			}
			return
		}},
		{name: "fmax", float: true, model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, math.Float32bits(max(f32(n, i), f32(m, i))))
			}
			return
		}},
		{name: "fmaxv", float: true, model: func(d, n, m *vec) (r vec) {
			put32(&r, 0, math.Float32bits(max(f32(n, 0), f32(n, 1), f32(n, 2), f32(n, 3))))
			return
		}},
		{name: "smax", model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, uint32(max(s32(n, i), s32(m, i))))
			}
			return
		}},
		{name: "smin", model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, uint32(min(s32(n, i), s32(m, i))))
			}
			return
		}},
		{name: "fmin", float: true, model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, math.Float32bits(min(f32(n, i), f32(m, i))))
			}
			return
		}},
		{name: "fcvtns", float: true, model: func(d, n, m *vec) (r vec) {
			for i := range 4 {
				put32(&r, i, roundEven(f32(n, i)))
			}
			return
		}},
		{name: "fcvtl .2d", float: true, model: func(d, n, m *vec) (r vec) {
			for i := range 2 {
				binary.LittleEndian.PutUint64(r[8*i:], math.Float64bits(float64(f32(n, i))))
			}
			return
		}},
		{name: "fcvtl2 .2d", float: true, model: func(d, n, m *vec) (r vec) {
			for i := range 2 {
				binary.LittleEndian.PutUint64(r[8*i:], math.Float64bits(float64(f32(n, 2+i))))
			}
			return
		}},
	}
	for code, o := range ops {
		if o.name == "sdot" && !cpu.ARM64.HasASIMDDP {
			continue
		}
		for range 200 {
			var d, n, m vec
			for i := range 16 {
				d[i], n[i], m[i] = byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))
			}
			if o.float {
				for i := range 4 {
					put32(&n, i, math.Float32bits(randFloat()))
					put32(&m, i, math.Float32bits(randFloat()))
				}
				if o.name == "fmul" || o.name == "fadd" || o.name == "faddp" {
					for i := range 4 { // keep ∞·0 and ∞−∞ (NaN) out
						put32(&n, i, math.Float32bits(float32(rng.NormFloat64()*1e3)))
						put32(&m, i, math.Float32bits(float32(rng.NormFloat64()*1e3)))
					}
				}
			}
			if o.half {
				for i := range 8 {
					put16(&n, i, uint16(rng.IntN(1<<16))&^0x4000) // exponent < 31: finite
				}
			}
			if o.name == "sadalp" || o.name == "ssra #2" || o.name == "ssra #4" || o.name == "smax" || o.name == "smin" {
				put32(&n, rng.IntN(4), 1<<31) // the int extremes
				put32(&m, rng.IntN(4), math.MaxInt32)
			}
			want := o.model(&d, &n, &m)
			got := d
			neonProbe(code, &got, &n, &m)
			if got != want {
				t.Fatalf("%s: d=%x n=%x m=%x → %x, want %x", o.name, d, n, m, got, want)
			}
		}
	}
}

// TestARM64Q8Rows: the LM head's decode kernel against q8DotGo row by
// row, bit for bit: row counts around the groups of four, k around the 16-
// and 64-byte steps (tails in Go), and all −128 (int16 products at their
// limit on the ARMv8.0 path).
func TestARM64Q8Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, kern := range arm64Variants(t) {
		for _, k := range []int{0, 1, 3, 15, 16, 17, 63, 64, 65, 100, 2560, 2567} {
			for _, nr := range []int{0, 1, 3, 4, 5, 8, 11} {
				w, x := make([]int8, nr*k), make([]int8, k+5) // x longer than k: only x[:k] counts
				randQ(rng, w)
				randQ(rng, x)
				for pass := range 2 {
					if pass == 1 {
						for i := range w {
							w[i] = -128
						}
						for i := range x {
							x[i] = -128
						}
					}
					out := make([]int32, nr)
					for i := range out {
						out[i] = 12345 // must be overwritten
					}
					kern.q8.rows(w, k, x, out)
					for r := range nr {
						if want := q8DotGo(w[r*k:(r+1)*k], x[:k]); out[r] != want {
							t.Fatalf("%s q8Rows k %d rows %d pass %d row %d: %d, want %d", kern.name, k, nr, pass, r, out[r], want)
						}
					}
				}
			}
		}
	}
}

// TestARM64Softmax: maxF32ARM64 exactly; expSubSumARM64 (Cephes' float32
// polynomial) within 2.5e-7 of float64 exp (1e-37 absolute for values
// near and under the float32 normal range, which the kernel clamps), the
// sum within 1e-6 of the float64 sum. Lengths around the 16-float steps;
// arguments from 0 down past the clamp, the edges included.
func TestARM64Softmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	edges := []float32{0, -1e-8, -0.5, -0.34657359, -1, -10, -86, -87.3, -87.33654, -87.34, -88, -95, -103, -104, -150, -300}
	for _, n := range []int{0, 1, 3, 15, 16, 17, 63, 64, 65, 100, 2560, 6912} {
		x := make([]float32, n)
		for i := range x {
			switch i % 3 {
			case 0:
				x[i] = float32(rng.Float64()*120 - 100)
			case 1:
				x[i] = float32(rng.NormFloat64() * 3)
			default:
				x[i] = 20 + edges[rng.IntN(len(edges))]
			}
		}
		if n > 0 {
			x[rng.IntN(n)] = 20 // the max, so x−mx spans the edges exactly
		}
		if got, want := maxF32ARM64(x), maxF32Go(x); got != want {
			t.Fatalf("n %d: max %v, want %v", n, got, want)
		}
		mx := maxF32Go(x)
		simd, ref := slices.Clone(x), slices.Clone(x)
		sum, refSum := expSubSumARM64(simd, mx), expSubSumGo(ref, mx)
		var exact float64 // Σ e^(x−mx) in float64: what both float32 sums approximate
		for i := range x {
			want := math.Exp(float64(x[i] - mx))
			exact += want
			if d := math.Abs(float64(simd[i]) - want); d > 2.5e-7*want && d > 1e-37 {
				t.Fatalf("n %d: exp(%v) = %v, want %v", n, x[i]-mx, simd[i], want)
			}
		}
		// Against the float64 sum: the portable sequential float32 sum is
		// itself off by a few 1e-6 at n = 6912.
		if d := math.Abs(float64(sum) - exact); d > 1e-6*exact || n == 0 && sum != 0 {
			t.Fatalf("n %d: sum %v, want %v (portable %v)", n, sum, exact, refSum)
		}
	}
	// The max anywhere in a SIMD-sized run, negative values only.
	for pos := range 40 {
		x := make([]float32, 40)
		for i := range x {
			x[i] = -float32(rng.Float64()*50) - 1
		}
		x[pos] = -0.75
		if got := maxF32ARM64(x); got != -0.75 {
			t.Fatalf("max at %d: %v, want -0.75", pos, got)
		}
	}
}

// TestARM64RMSNorm: Σx² in float64 to rounding, the scaling pass bit for
// bit, also in place (dst = x).
func TestARM64RMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{0, 1, 3, 15, 16, 17, 33, 63, 64, 65, 2560, 6912} {
		x, w := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], w[i] = float32(rng.NormFloat64()*3), float32(rng.NormFloat64())
		}
		if n > 2 {
			x[1] = 1e-30 // float32 squares would underflow; float64 ones don't
			x[2] = 3e19  // nor overflow
		}
		if got, want := sumSquaresARM64(x), sumSquaresGo(x); math.Abs(got-want) > 1e-12*want {
			t.Fatalf("n %d: Σx² %v, want %v", n, got, want)
		}
		for _, inv := range []float32{0.37, 1.3e-19, 7.77e5} {
			got, want := make([]float32, n), make([]float32, n)
			scaleMulARM64(got, x, w, inv)
			scaleMulGo(want, x, w, inv)
			if !sameBits(got, want) {
				t.Fatalf("n %d inv %v: scaleMul differs", n, inv)
			}
			inPlace := slices.Clone(x)
			scaleMulARM64(inPlace, inPlace, w, inv)
			if !sameBits(inPlace, want) {
				t.Fatalf("n %d inv %v: scaleMul in place differs", n, inv)
			}
		}
	}
}

func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestARM64Q8Head: the int8 head through q8Linear.mul, as matmul runs it
// (each table's q8 rows kernel, 64-row chunks, a row range not starting
// at 0, two tokens), against the portable expression.
func TestARM64Q8Head(t *testing.T) {
	for _, kern := range arm64Variants(t) {
		testARM64Q8Head(t, kern)
	}
}

func testARM64Q8Head(t *testing.T, kern *kernels) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, k := range []int{40, 2600} {
		const rows, r0 = 75, 3
		raw := make([]byte, 2*rows*k)
		for i := range raw {
			raw[i] = byte(rng.IntN(256)) & 0xbf // finite halves
		}
		h := quantizeHead(&floatRows{raw: raw, dt: "F16", r: rows, c: k}, &arena{})
		a := newActs(kern, rng, 2, k)
		a.quantize()
		out := make([]float32, 2*rows)
		h.mul(out, rows, a, r0, rows)
		for tk := range 2 {
			for r := r0; r < rows; r++ {
				want := float32(q8DotGo(h.w[r*k:(r+1)*k], a.q[tk*k:(tk+1)*k])) * h.scale[r] * a.scale[tk]
				if math.Float32bits(out[tk*rows+r]) != math.Float32bits(want) {
					t.Fatalf("%s k %d token %d row %d: %v, want %v", kern.name, k, tk, r, out[tk*rows+r], want)
				}
			}
		}
	}
}
