//go:build !purego && (amd64 || arm64)

package cpu

import "unsafe"

// gemmPanel is an assembly panel (gemm_amd64.s, gemm_arm64.s): for the
// four weight rows at w (ws bytes apart) and n tokens at x (xs bytes
// apart), out[t·ldo + i] += Σ_{j<k} W[i][j]·x_t[j]; k is a positive
// multiple of the panel's vector width.
type gemmPanel func(w *byte, ws int, x *float32, xs, k, n int, out *float32, ldo int)

// gemmL2Acts is how many bytes of activations a K pass keeps: the pass's
// slice of every token is re-read by each four-row panel, so it should
// stay in L2 with the panel's rows (L2 is 512 KiB–2 MiB a core on the CPUs
// that run this). Measured on Zen 4 (1 MiB L2), 512 rows × 4096 × 64
// tokens, F16: 64 KiB passes 101 GFLOP/s, 256 KiB 112, 512 KiB 114, one
// pass (1 MiB) 115 — each pass adds a reduction per panel and token.
const gemmL2Acts = 512 << 10

// gemmSIMD is one dtype's product over panel: rows × k weights of es
// bytes at w. The whole panels and the vector part of K go through the
// assembly in K passes; the last k%vl weights of each row and the last
// rows%4 rows (rare: the matrices this runs are multiples of 16 rows)
// through dot, the table's dot kernel for the dtype: dot(r, k0, t) is row
// r's weights k0… against token t's.
func gemmSIMD(panel gemmPanel, vl, es int, w *byte, rows, k int, x []float32, n int, out []float32, ldo int,
	dot func(r, k0, t int) float32) {
	if rows == 0 || n == 0 {
		return
	}
	_ = out[(n-1)*ldo+rows-1]
	_ = x[:n*k]
	kv, rv := k&^(vl-1), rows&^3
	if kv > 0 && rv > 0 {
		for t := range n {
			clear(out[t*ldo : t*ldo+rv])
		}
		kc := gemmPass(kv, n, vl)
		for k0 := 0; k0 < kv; k0 += kc {
			kl := min(kc, kv-k0)
			for r := 0; r < rv; r += 4 {
				panel((*byte)(unsafe.Add(unsafe.Pointer(w), (r*k+k0)*es)), k*es, &x[k0], 4*k, kl, n, &out[r], ldo)
			}
		}
		if kv < k {
			for t := range n {
				for r := range rv {
					out[t*ldo+r] += dot(r, kv, t)
				}
			}
		}
	} else {
		rv = 0
	}
	for t := range n {
		for r := rv; r < rows; r++ {
			out[t*ldo+r] = dot(r, 0, t)
		}
	}
}

// gemmPass is the K pass for n tokens: as long as n·kc floats fit
// gemmL2Acts, in equal passes of whole vectors.
func gemmPass(kv, n, vl int) int {
	most := max(vl, gemmL2Acts/(4*n)&^(vl-1))
	passes := (kv + most - 1) / most
	return ((kv+passes-1)/passes + vl - 1) &^ (vl - 1)
}

// gemmPanels is one instruction set's three panels.
type gemmPanels struct {
	f32, f16, bf16 gemmPanel
	vl             int
}

// gemm wraps the panels as a floatGemm whose edges use k's dot kernels,
// those k holds now (addSIMD calls useGemm after choosing them).
func (p gemmPanels) gemm(k *kernels) floatGemm {
	dotF32, dotF16, dotBF16 := k.dotF32, k.dotF16, k.dotBF16
	return floatGemm{
		f32: func(w []float32, kk int, x []float32, n int, out []float32, ldo int) {
			rows := len(w) / max(kk, 1)
			gemmSIMD(p.f32, p.vl, 4, (*byte)(unsafe.Pointer(unsafe.SliceData(w))), rows, kk, x, n, out, ldo,
				func(r, k0, t int) float32 { return dotF32(w[r*kk+k0:(r+1)*kk], x[t*kk+k0:(t+1)*kk]) })
		},
		f16: func(w []byte, kk int, x []float32, n int, out []float32, ldo int) {
			rows := len(w) / max(2*kk, 1)
			gemmSIMD(p.f16, p.vl, 2, unsafe.SliceData(w), rows, kk, x, n, out, ldo,
				func(r, k0, t int) float32 { return dotF16(w[2*(r*kk+k0):2*(r+1)*kk], x[t*kk+k0:(t+1)*kk]) })
		},
		bf16: func(w []byte, kk int, x []float32, n int, out []float32, ldo int) {
			rows := len(w) / max(2*kk, 1)
			gemmSIMD(p.bf16, p.vl, 2, unsafe.SliceData(w), rows, kk, x, n, out, ldo,
				func(r, k0, t int) float32 { return dotBF16(w[2*(r*kk+k0):2*(r+1)*kk], x[t*kk+k0:(t+1)*kk]) })
		},
	}
}
