//go:build !purego

package cpu

//go:noescape
func rows4Q8_0AVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)

//go:noescape
func rows4Q4_0AVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)

//go:noescape
func rows4Q4KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)

//go:noescape
func rows4Q5KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)

//go:noescape
func rows4Q6KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)

// useQuantTiles puts the prefill (rowsN) kernels f allows into k: the
// AVX2 four-token ones for Q8_0, Q4_0, Q4_K, Q5_K and Q6_K (the types of
// the Q8_0, Q4_0, Q4_K_M and Q5_K_M files), and with AVX-512 VNNI the
// eight-token ones (quant_avx512_amd64.go).
func useQuantTiles(k *kernels, f cpuFeatures) {
	if !f.avx2 {
		return
	}
	q := &k.quant
	q[typeQ8_0].rowsN, q[typeQ8_0].tokens = tileRows(rows4Q8_0AVX2, 34, 32, 0, 4), 4
	q[typeQ4_0].rowsN, q[typeQ4_0].tokens = tileRows(rows4Q4_0AVX2, 18, 32, 0, 4), 4
	q[typeQ4K].rowsN, q[typeQ4K].tokens = tileRows(rows4Q4KAVX2, 144, 256, 16, 4), 4
	q[typeQ5K].rowsN, q[typeQ5K].tokens = tileRows(rows4Q5KAVX2, 176, 256, 16, 4), 4
	q[typeQ6K].rowsN, q[typeQ6K].tokens = tileRows(rows4Q6KAVX2, 210, 256, 16, 4), 4
	if f.avx512 && f.vnni {
		useQuantVNNI(k)
	}
}
