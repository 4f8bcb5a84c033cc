package cpu

import "unsafe"

// The glue kernels' Go side, shared by AVX2, AVX-512 and NEON: each runs
// an assembly kernel on the longest prefix of a multiple of width floats
// (width a power of two) and the portable code on the rest, after the
// bounds checks that make the kernel's unchecked pointers safe.

func absMaxWith(kern func(x *float32, n int) float32, width int, x []float32) float32 {
	n := len(x) &^ (width - 1)
	var m float32
	if n > 0 {
		m = kern(unsafe.SliceData(x), n)
	}
	return max(m, absMaxGo(x[n:]))
}

func maxF32With(kern func(x *float32, n int) float32, width int, x []float32) float32 {
	n := len(x) &^ (width - 1)
	if n == 0 {
		return maxF32Go(x)
	}
	return max(kern(unsafe.SliceData(x), n), maxF32Go(x[n:]))
}

func sumSquaresWith(kern func(x *float32, n int) float64, width int, x []float32) float64 {
	n := len(x) &^ (width - 1)
	var s float64
	if n > 0 {
		s = kern(unsafe.SliceData(x), n)
	}
	return s + sumSquaresGo(x[n:])
}

func expSubSumWith(kern func(x *float32, n int, mx float32) float32, width int, x []float32, mx float32) float32 {
	n := len(x) &^ (width - 1)
	var s float32
	if n > 0 {
		s = kern(unsafe.SliceData(x), n, mx)
	}
	return s + expSubSumGo(x[n:], mx)
}

// scaleMulWith: dst may be x.
func scaleMulWith(kern func(dst, x, w *float32, n int, inv float32), width int, dst, x, w []float32, inv float32) {
	n := len(x) &^ (width - 1)
	if n > 0 {
		_ = dst[n-1]
		_ = w[n-1]
		kern(unsafe.SliceData(dst), unsafe.SliceData(x), unsafe.SliceData(w), n, inv)
	}
	scaleMulGo(dst[n:], x[n:], w[n:], inv)
}

func relu2MulWith(kern func(g, u *float32, n int), width int, g, u []float32) {
	n := len(g) &^ (width - 1)
	if n > 0 {
		_ = u[n-1]
		kern(unsafe.SliceData(g), unsafe.SliceData(u), n)
	}
	relu2MulGo(g[n:], u[n:len(g)])
}

// siluMulWith runs a siluMul kernel on the multiple of width and the
// portable loop on the rest.
func siluMulWith(kern func(g, u *float32, n int), width int, g, u []float32) {
	n := len(g) &^ (width - 1)
	if n > 0 {
		_ = u[n-1]
		kern(unsafe.SliceData(g), unsafe.SliceData(u), n)
	}
	siluMulGo(g[n:], u[n:len(g)])
}

// siluMulByExp makes a siluMul of an expSubSum kernel, for tables that
// have a vector exp but no siluMul kernel: e^−g a chunk at a time into a
// stack buffer, then the portable quotient (float32 division, not
// float64 exp, per element).
func siluMulByExp(expSubSum func(x []float32, mx float32) float32) func(g, u []float32) {
	return func(g, u []float32) {
		var e [256]float32
		u = u[:len(g)]
		for len(g) > 0 {
			n := min(len(g), len(e))
			for i, v := range g[:n] {
				e[i] = -v
			}
			expSubSum(e[:n], 0)
			for i, v := range g[:n] {
				g[i] = v / (1 + e[i]) * u[i]
			}
			g, u = g[n:], u[n:]
		}
	}
}

// quantBlocksWith runs a kernel that writes q and bsum (not qp) on the
// full 256-blocks and the portable code on a short last one; qp (only the
// AVX-512 I2 kernels read it) is derived from q afterwards.
func quantBlocksWith(kern func(x *float32, nb int, inv float32, q *int8, bsum *int32), x []float32, inv float32, q, qp []int8, bsum []int32) {
	full := min(len(bsum), len(x)/256)
	if full > 0 {
		_ = q[full*256-1]
		kern(unsafe.SliceData(x), full, inv, unsafe.SliceData(q), unsafe.SliceData(bsum))
	}
	if full < len(bsum) {
		quantBlocksGo(x[full*256:], inv, q[full*256:], nil, bsum[full:])
	}
	if qp != nil {
		permuteI2(qp, q[:len(x)])
	}
}

// The attention kernels for head dim 128 (the only size forward.go calls
// them for): one head (scores, mix) or four heads that share a key/value
// head (scores4, mix4; their weights and outputs ldw/ldo apart).

func attnScoresWith(kern func(q, k *float32, stride, n int, scale float32, out *float32), q, k []float32, stride, n int, scale float32, out []float32) {
	if n == 0 {
		return
	}
	_ = q[127]
	_ = k[(n-1)*stride+127]
	_ = out[n-1]
	kern(unsafe.SliceData(q), unsafe.SliceData(k), stride, n, scale, unsafe.SliceData(out))
}

func attnMixWith(kern func(w, v *float32, stride, n int, o *float32), w, v []float32, stride, n int, o []float32) {
	_ = o[127]
	if n == 0 {
		clear(o[:128])
		return
	}
	_ = w[n-1]
	_ = v[(n-1)*stride+127]
	kern(unsafe.SliceData(w), unsafe.SliceData(v), stride, n, unsafe.SliceData(o))
}

func attnScores4With(kern func(q, k *float32, stride, n int, scale float32, out *float32, ldo int), q, k []float32, stride, n int, scale float32, out []float32, ldo int) {
	if n == 0 {
		return
	}
	_ = q[4*128-1]
	_ = k[(n-1)*stride+127]
	_ = out[3*ldo+n-1]
	kern(unsafe.SliceData(q), unsafe.SliceData(k), stride, n, scale, unsafe.SliceData(out), ldo)
}

func attnMix4With(kern func(w *float32, ldw int, v *float32, stride, n int, o *float32), w []float32, ldw int, v []float32, stride, n int, o []float32) {
	_ = o[4*128-1]
	if n == 0 {
		clear(o[:4*128])
		return
	}
	_ = w[3*ldw+n-1]
	_ = v[(n-1)*stride+127]
	kern(unsafe.SliceData(w), ldw, unsafe.SliceData(v), stride, n, unsafe.SliceData(o))
}
