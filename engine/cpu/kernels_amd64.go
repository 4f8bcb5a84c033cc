//go:build !purego

package cpu

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/edgectl/edgectl/format/half"
)

//go:noescape
func tq2BlockSumsAVX2(row *byte, q *int8, nb int, out *int32)

//go:noescape
func dotF32AVX2(a, b *float32, n int) float32

//go:noescape
func i2DotAVX2(row *byte, q *int8, nb int) int32

//go:noescape
func i2Dot4AVX2(row *byte, q *int8, k int, nb int, out *int32)

//go:noescape
func i2DotAVX512(row *byte, qp *int8, nb int) int32

//go:noescape
func i2Dot4AVX512(row *byte, qp *int8, k int, nb int, out *int32)

//go:noescape
func i2DotVNNI(row *byte, qp *int8, nb int, blk int) int32

//go:noescape
func i2Dot4VNNI(row *byte, qp *int8, k int, nb int, blk int, out *int32)

//go:noescape
func i2x4Dot4x4VNNI(group *byte, qp *int8, k int, nb int, out *int32)

//go:noescape
func q8DotVNNI(w *int8, xu *byte, n int) int32

//go:noescape
func i2RowsScaledVNNI(rows *byte, qp *int8, nb int, n int, total int32, xs float32, scale *float32, out *float32)

//go:noescape
func i2x4RowsScaledVNNI(groups *byte, qp *int8, nb int, ngroups int, total int32, xs float32, scale *float32, out *float32)

//go:noescape
func attnScores128(q *float32, k *float32, stride int, n int, scale float32, out *float32)

//go:noescape
func attnMix128(w *float32, v *float32, stride int, n int, o *float32)

//go:noescape
func relu2MulAVX512(x *float32, y *float32, n int)

//go:noescape
func attnScores4x128(q *float32, k *float32, stride int, n int, scale float32, out *float32, ldo int)

//go:noescape
func attnMix4x128(w *float32, ldw int, v *float32, stride int, n int, o *float32)

//go:noescape
func q8RowsVNNI(w *int8, xu *byte, stride int, n64 int, nrows int, out *int32)

//go:noescape
func absMaxAVX512(x *float32, n int) float32

//go:noescape
func maxAVX512(x *float32, n int) float32

//go:noescape
func sumSquaresAVX512(x *float32, n int) float64

//go:noescape
func scaleMulAVX512(dst, x, w *float32, n int, inv float32)

//go:noescape
func expSubSumAVX512(x *float32, n int, mx float32) float32

//go:noescape
func quantBlocksAVX512(x *float32, nb int, inv float32, q *int8, qp *int8, bsum *int32)

//go:noescape
func axpyF32AVX2(a float32, x, y *float32, n int)

//go:noescape
func q8DotAVX2(w *int8, x *int8, n int) int32

//go:noescape
func i2RowsScaledAVX2(rows *byte, q *int8, nb int, n int, total int32, xs float32, scale *float32, out *float32)

//go:noescape
func i2Dot4x2AVX2(row *byte, stride int, q *int8, k int, nb int, out *int32)

//go:noescape
func q8RowsAVX2(w *int8, x *int8, stride int, n32 int, nrows int, out *int32)

//go:noescape
func readSumAVX2(p *byte, n int) uint64

//go:noescape
func dotF16AVX2(w *byte, x *float32, n int) float32

// detectFeatures reports the CPU's extensions the amd64 kernels use.
func detectFeatures() cpuFeatures {
	return cpuFeatures{
		avx2:   cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C,
		avx512: cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW,
		vnni:   cpu.X86.HasAVX512VNNI,
		vbmi:   cpu.X86.HasAVX512VBMI && cpu.X86.HasAVX512GFNI,
	}
}

// addSIMD puts the kernels f allows into k (newKernels): the AVX2 set,
// then on AVX-512 CPUs the 512-bit kernels in place of some of them, and
// with VNNI its I2 and int8-head kernels. Without AVX-512 the AVX2 glue
// kernels (glue_amd64.go) run the passes between the products.
func addSIMD(k *kernels, f cpuFeatures) {
	if !f.avx2 {
		return
	}
	useAVX2(k)
	k.siluMul = siluMulGlueAVX2 // 8 lanes suffice: ~1% of a token's work
	useQuantTiles(k, f)         // quant_tile_amd64.go: the block types' prefill kernels
	useGemm(k, f)
	useBase3(k, f) // base3_amd64.go: the B3 rows
	useSherry(k, f)
	if !f.avx512 {
		useGlueAVX2(k)
		return
	}
	useAVX512(k)
	if f.vnni {
		useVNNI(k)
		if f.vbmi {
			useQ4KVNNI(k) // q4k_avx512_amd64.go: the one-token Q4_K kernel
			useQ6KVNNI(k) // q6k_avx512_amd64.go: the one-token Q6_K kernel
		}
	}
}

// useAVX2 puts the AVX2+FMA+F16C kernels into k: TQ2_0 and I2 rows, the
// int8 head, the F32/F16 dots, axpy and the read probe.
func useAVX2(k *kernels) {
	i2 := &k.tern[typeI2]
	k.name = "avx2"
	useQuantAVX2(k)
	useGPTQAVX2(k) // gptq_amd64.go: GPTQ/AWQ int4
	k.tern[typeTQ2].blockDot = tq2DotFromBlockSums(tq2BlockSumsAVX2)
	i2.dot = i2DotKernel(func(r *byte, q *int8, nb, _ int) int32 { return i2DotAVX2(r, q, nb) }, i2Block)
	i2.dot4 = i2Dot4Kernel(func(r *byte, q *int8, kk, nb, _ int, out *int32) { i2Dot4AVX2(r, q, kk, nb, out) }, i2Block)
	// Decode's products in one call per lane, not one Go call per row
	// (which cost ~20% of the I2 time) — and the head likewise.
	i2.rows = func(rows []byte, q []int8, total int32, xs float32, scale, out []float32) {
		nb := len(q) / 256
		if len(out) == 0 || nb == 0 {
			return
		}
		_ = rows[len(out)*nb*i2Block-1]
		_ = scale[len(out)-1]
		i2RowsScaledAVX2(unsafe.SliceData(rows), unsafe.SliceData(q), nb, len(out), total, xs, unsafe.SliceData(scale), unsafe.SliceData(out))
	}
	i2.dot4x2 = func(rows []byte, stride int, q []int8, kk int, totals []int32, out *[8]int32) {
		nb := kk / 256
		_ = rows[stride+nb*i2Block-1]
		_ = q[3*kk+nb*256-1]
		_ = totals[3]
		if nb > 0 {
			i2Dot4x2AVX2(unsafe.SliceData(rows), stride, unsafe.SliceData(q), kk, nb, &out[0])
		} else {
			*out = [8]int32{}
		}
		for t := range 8 {
			out[t] -= totals[t%4]
		}
	}
	k.q8.rows = func(w []int8, kk int, x []int8, out []int32) {
		if len(out) == 0 {
			return
		}
		n32 := kk &^ 31
		_ = w[len(out)*kk-1]
		_ = x[kk-1]
		q8RowsAVX2(unsafe.SliceData(w), unsafe.SliceData(x), kk, n32, len(out), unsafe.SliceData(out))
		if n32 < kk {
			for r := range out {
				out[r] += q8DotGo(w[r*kk+n32:(r+1)*kk], x[n32:kk])
			}
		}
	}
	k.q8.dot = func(w, x []int8) int32 {
		n := len(w) &^ 31
		var s int32
		if n > 0 {
			s = q8DotAVX2(unsafe.SliceData(w), unsafe.SliceData(x[:len(w)]), n)
		}
		return s + q8DotGo(w[n:], x[n:len(w)])
	}
	k.axpyF32 = func(a float32, x, y []float32) {
		n := len(y) &^ 15
		if n > 0 {
			axpyF32AVX2(a, unsafe.SliceData(x[:n]), unsafe.SliceData(y), n)
		}
		axpyF32Go(a, x[n:len(y)], y[n:])
	}
	k.readSum = func(b []byte) uint64 {
		n := len(b) &^ 127
		var s uint64
		if n > 0 {
			s = readSumAVX2(unsafe.SliceData(b), n)
		}
		return s + readSumGo(b[n:])
	}
	k.dotF32 = func(a, b []float32) float32 {
		n := len(a) &^ 31
		var s float32
		if n > 0 {
			s = dotF32AVX2(unsafe.SliceData(a), unsafe.SliceData(b[:len(a)]), n)
		}
		for i := n; i < len(a); i++ {
			s += a[i] * b[i]
		}
		return s
	}
	k.dotF16 = func(w []byte, x []float32) float32 {
		kk := len(w) / 2
		n := kk &^ 31
		var s float32
		if n > 0 {
			s = dotF16AVX2(unsafe.SliceData(w), unsafe.SliceData(x[:kk]), n)
		}
		for i := n; i < kk; i++ {
			s += half.F16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
		}
		return s
	}
}

// useAVX512 replaces the I2 kernels with 512-bit ones that read permuted
// activations (so the AVX2 rows and two-row kernels, which read them
// unpermuted, go) and adds the AVX-512 glue and attention kernels.
func useAVX512(k *kernels) {
	i2 := &k.tern[typeI2]
	k.name = "avx512"
	k.i2Permuted = true
	i2.rows, i2.dot4x2 = nil, nil
	k.attnScores = func(q, kk []float32, stride, n int, scale float32, out []float32) {
		attnScoresWith(attnScores128, q, kk, stride, n, scale, out)
	}
	k.attnMix = func(w, v []float32, stride, n int, o []float32) {
		attnMixWith(attnMix128, w, v, stride, n, o)
	}
	k.attnScores4 = func(q, kk []float32, stride, n int, scale float32, out []float32, ldo int) {
		attnScores4With(attnScores4x128, q, kk, stride, n, scale, out, ldo)
	}
	k.attnMix4 = func(w []float32, ldw int, v []float32, stride, n int, o []float32) {
		attnMix4With(attnMix4x128, w, ldw, v, stride, n, o)
	}
	k.relu2Mul = func(g, u []float32) { relu2MulWith(relu2MulAVX512, 16, g, u) }
	k.sumSquares = func(x []float32) float64 { return sumSquaresWith(sumSquaresAVX512, 16, x) }
	k.scaleMul = func(dst, x, w []float32, inv float32) { scaleMulWith(scaleMulAVX512, 16, dst, x, w, inv) }
	k.maxF32 = func(x []float32) float32 { return maxF32With(maxAVX512, 16, x) }
	k.expSubSum = func(x []float32, mx float32) float32 { return expSubSumWith(expSubSumAVX512, 16, x, mx) }
	k.absMax = func(x []float32) float32 { return absMaxWith(absMaxAVX512, 16, x) }
	k.quantBlocks = func(x []float32, inv float32, q, qp []int8, bsum []int32) {
		nb := len(bsum)
		if nb == 0 {
			return
		}
		_ = x[nb*256-1]
		_ = q[nb*256-1]
		if qp == nil {
			qp = make([]int8, nb*256) // the kernel always writes both
		}
		_ = qp[nb*256-1]
		quantBlocksAVX512(unsafe.SliceData(x), nb, inv, unsafe.SliceData(q), unsafe.SliceData(qp), unsafe.SliceData(bsum))
	}
	i2.dot = i2DotKernel(func(r *byte, q *int8, nb, _ int) int32 { return i2DotAVX512(r, q, nb) }, i2Block)
	i2.dot4 = i2Dot4Kernel(func(r *byte, q *int8, kk, nb, _ int, out *int32) { i2Dot4AVX512(r, q, kk, nb, out) }, i2Block)
}

// useVNNI adds VPDPBUSD kernels: I2 and I2x4 rows, the int8 head on
// x+128 as unsigned bytes, and Q2_K's one-token rows.
func useVNNI(k *kernels) {
	i2, i2x4 := &k.tern[typeI2], &k.tern[typeI2x4]
	k.name = "avx512vnni"
	k.q8.unsigned = true
	k.q8.dotU = func(w []int8, xu []byte, x []int8, wsum int32) int32 {
		n := len(w) &^ 63
		var s int32
		if n > 0 {
			s = q8DotVNNI(unsafe.SliceData(w), unsafe.SliceData(xu[:len(w)]), n) - 128*wsum
		}
		return s + q8DotGo(w[n:], x[n:len(w)])
	}
	k.q8.rowsU = func(w []int8, kk int, xu []byte, out []int32) {
		if len(out) == 0 {
			return
		}
		_ = w[len(out)*kk-1]
		_ = xu[kk-1]
		q8RowsVNNI(unsafe.SliceData(w), unsafe.SliceData(xu), kk, kk&^63, len(out), unsafe.SliceData(out))
	}
	useQ23KVNNI(k) // q23k_avx512_amd64.go: the one-token Q2_K and Q3_K kernels
	i2.dot = i2DotKernel(i2DotVNNI, i2Block)
	i2.rows = func(rows []byte, qp []int8, total int32, xs float32, scale, out []float32) {
		nb := len(qp) / 256
		if len(out) == 0 || nb == 0 {
			return
		}
		_ = rows[len(out)*nb*64-1]
		_ = scale[len(out)-1]
		i2RowsScaledVNNI(unsafe.SliceData(rows), unsafe.SliceData(qp), nb, len(out), total, xs, unsafe.SliceData(scale), unsafe.SliceData(out))
	}
	i2.dot4 = i2Dot4Kernel(i2Dot4VNNI, i2Block)
	// The interleaved layout: one sequential stream per group of four
	// rows (see repack.go).
	i2x4.rows = func(groups []byte, qp []int8, total int32, xs float32, scale, out []float32) {
		nb := len(qp) / 256
		if len(out) == 0 || nb == 0 {
			return
		}
		_ = groups[len(out)/4*4*nb*i2Block-1]
		_ = scale[len(out)-1]
		i2x4RowsScaledVNNI(unsafe.SliceData(groups), unsafe.SliceData(qp), nb, len(out)/4, total, xs, unsafe.SliceData(scale), unsafe.SliceData(out))
	}
	i2x4.dot = i2DotKernel(i2DotVNNI, 4*i2Block)
	i2x4.dot4 = i2Dot4Kernel(i2Dot4VNNI, 4*i2Block)
	i2x4.dot4x4 = func(group []byte, q []int8, kk int, totals []int32, out *[16]int32) {
		nb := kk / 256
		_ = totals[3]
		if nb > 0 {
			_ = group[nb*4*i2Block-1]
			_ = q[3*kk+nb*256-1]
			i2x4Dot4x4VNNI(unsafe.SliceData(group), unsafe.SliceData(q), kk, nb, &out[0])
		} else {
			*out = [16]int32{}
		}
		for i := range out {
			out[i] -= totals[i%4]
		}
	}
}

// i2DotKernel wraps a one-row I2 kernel whose blocks lie blk bytes apart
// (64 plain I2, 256 I2x4) as an I2 or I2x4 dot: Σ (code−1)·q = Σ code·q − total.
func i2DotKernel(k func(row *byte, q *int8, nb, blk int) int32, blk int) func(row []byte, q []int8, total int32) int32 {
	return func(row []byte, q []int8, total int32) int32 {
		nb := len(q) / 256
		if nb == 0 {
			return -total
		}
		_ = row[(nb-1)*blk+i2Block-1]
		return k(unsafe.SliceData(row), unsafe.SliceData(q), nb, blk) - total
	}
}

// i2Dot4Kernel wraps a one-row, four-token I2 kernel the same way, as a
// dot4 (activation rows k apart in q).
func i2Dot4Kernel(kern func(row *byte, q *int8, k, nb, blk int, out *int32), blk int) func(row []byte, q []int8, k int, totals []int32, out *[4]int32) {
	return func(row []byte, q []int8, k int, totals []int32, out *[4]int32) {
		nb := k / 256
		if nb == 0 {
			*out = [4]int32{-totals[0], -totals[1], -totals[2], -totals[3]}
			return
		}
		_ = row[(nb-1)*blk+i2Block-1]
		_ = q[3*k+nb*256-1]
		kern(unsafe.SliceData(row), unsafe.SliceData(q), k, nb, blk, &out[0])
		for t := range 4 {
			out[t] -= totals[t]
		}
	}
}
