package cpu

// Float prefill as a matrix product. Decode multiplies each weight row by
// one token with the dot kernels; a prefill batch would do the same for
// every (row, token) pair, reading each row and each token's activations
// again for every product (two loads per multiply-add). The gemm kernels
// instead take a tile of weight rows against a block of tokens: every
// weight vector loaded (and widened from F16/BF16, in registers) meets
// several tokens and every token vector several rows, as llamafile's
// tinyBLAS does for row-major weights. The weights stay as stored: no
// widened or repacked copy.

// floatGemm is one instruction set's float prefill products (kernels.gemm):
// out[t·ldo + r] = W[r]·x_t for every row r of w (k > 0 weights each, so
// len(w)/k rows, in the dtype's bytes for F16/BF16) and token t < n, whose
// activations are x[t·k : (t+1)·k]. SIMD versions agree with the portable
// ones to rounding (FMA, another summation order). An entry may be nil
// (tests and benchmarks time the per-pair dot path that way): mul then
// loops over the dot kernels.
type floatGemm struct {
	f32       func(w []float32, k int, x []float32, n int, out []float32, ldo int)
	f16, bf16 func(w []byte, k int, x []float32, n int, out []float32, ldo int)
}

// gemmGoK is the portable kernels' pass over K: four widened rows (8 KiB)
// stay in L1 while every token's slice meets them.
const gemmGoK = 512

// portableGemm is the portable Go floatGemm.
var portableGemm = floatGemm{
	f32: func(w []float32, k int, x []float32, n int, out []float32, ldo int) {
		gemmGo(len(w)/max(k, 1), k, x, n, out, ldo, func(dst []float32, r, k0 int) {
			copy(dst, w[r*k+k0:])
		})
	},
	f16: func(w []byte, k int, x []float32, n int, out []float32, ldo int) {
		gemmGo(len(w)/max(2*k, 1), k, x, n, out, ldo, func(dst []float32, r, k0 int) {
			src := w[2*(r*k+k0) : 2*(r*k+k0+len(dst))]
			for j := range dst {
				dst[j] = f16Table[uint16(src[2*j])|uint16(src[2*j+1])<<8]
			}
		})
	},
	bf16: func(w []byte, k int, x []float32, n int, out []float32, ldo int) {
		gemmGo(len(w)/max(2*k, 1), k, x, n, out, ldo, func(dst []float32, r, k0 int) {
			src := w[2*(r*k+k0) : 2*(r*k+k0+len(dst))]
			for j := range dst {
				dst[j] = float32frombits(uint32(src[2*j])<<16 | uint32(src[2*j+1])<<24)
			}
		})
	},
}

// gemmGo computes out[t·ldo + r] = W[r]·x_t for r < rows, t < n, in passes
// of gemmGoK weights: widen(dst, r, k0) writes row r's weights k0… as
// float32 (len(dst) of them). Each group of four rows is widened once per
// pass and then meets every token, four sums in registers: 1.25 loads a
// multiply-add where the dot path takes 2 (and widens every weight once
// per token). Four rows by two tokens, eight sums, spilled registers on
// amd64 and ran at half the speed (Zen 4: 8.7 GFLOP/s against 4.6).
func gemmGo(rows, k int, x []float32, n int, out []float32, ldo int, widen func(dst []float32, r, k0 int)) {
	if rows == 0 || n == 0 {
		return
	}
	_ = out[(n-1)*ldo+rows-1]
	for t := range n {
		clear(out[t*ldo : t*ldo+rows])
	}
	if k == 0 {
		return
	}
	_ = x[n*k-1]
	var buf [4 * gemmGoK]float32
	for k0 := 0; k0 < k; k0 += gemmGoK {
		kl := min(gemmGoK, k-k0)
		// Resliced to len(w0), so the compiler drops the loops' bounds checks.
		w0 := buf[:kl]
		w1, w2, w3 := buf[kl:][:len(w0)], buf[2*kl:][:len(w0)], buf[3*kl:][:len(w0)]
		for r := 0; r < rows; r += 4 {
			nr := min(4, rows-r)
			for i := range 4 {
				if i < nr {
					widen(buf[i*kl:(i+1)*kl], r+i, k0)
				} else {
					clear(buf[i*kl : (i+1)*kl])
				}
			}
			for t := range n {
				x0 := x[t*k+k0:][:len(w0)]
				var s0, s1, s2, s3 float32
				for j, a := range x0 {
					s0 += w0[j] * a
					s1 += w1[j] * a
					s2 += w2[j] * a
					s3 += w3[j] * a
				}
				gemmAdd(out[t*ldo+r:], nr, s0, s1, s2, s3)
			}
		}
	}
}

// gemmAdd adds the first nr of four row sums to o.
func gemmAdd(o []float32, nr int, s0, s1, s2, s3 float32) {
	o[0] += s0
	if nr > 1 {
		o[1] += s1
	}
	if nr > 2 {
		o[2] += s2
	}
	if nr > 3 {
		o[3] += s3
	}
}
