//go:build !purego

package cpu

import "unsafe"

//go:noescape
func gptqRowsAVX2(w *byte, sm *float32, q *int8, d *float32, xg *float32, ng int, nb int, nrows int, out *float32)

// useGPTQAVX2 puts the AVX2 GPTQ/AWQ int4 kernel into k (gptq_kernels.go
// has the contract, gptq_amd64.s the method).
func useGPTQAVX2(k *kernels) {
	k.gptq.rows = func(w []byte, sm []float32, x gptqX, out []float32) {
		G := len(x.xg)
		if G == 0 || len(out) == 0 {
			clear(out)
			return
		}
		B := len(x.d) / G
		_ = w[len(out)*G*B*16-1]
		_ = sm[len(out)*2*G-1]
		_ = x.q[G*B*32-1]
		_ = x.d[G*B-1]
		gptqRowsAVX2(unsafe.SliceData(w), unsafe.SliceData(sm), unsafe.SliceData(x.q), unsafe.SliceData(x.d), unsafe.SliceData(x.xg), G, B, len(out), unsafe.SliceData(out))
	}
}
