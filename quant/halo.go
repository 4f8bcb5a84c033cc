package quant

// HALO_V2 (.h1b v1/v2): 4 weights per byte along K, weight 4b+slot at bits
// 2·slot (LSB first), codes 0→−1, 1→0, 2→+1, 3→0 (reserved).

// RowBytesHALO2 is the packed size of k weights.
func RowBytesHALO2(k int) int { return (k + 3) / 4 }

// PackRowHALO2 packs ternary values q (each −1, 0 or +1) into dst
// (RowBytesHALO2(len(q)) bytes). A short tail is padded with code 1 (0).
func PackRowHALO2(dst []byte, q []int8) {
	for b := range dst[:RowBytesHALO2(len(q))] {
		var v byte
		for s := 0; s < 4; s++ {
			c := byte(1)
			if i := 4*b + s; i < len(q) {
				c = byte(q[i] + 1)
			}
			v |= c << (2 * s)
		}
		dst[b] = v
	}
}

// UnpackRowHALO2 decodes len(dst) weights.
func UnpackRowHALO2(dst []int8, src []byte) {
	for i := range dst {
		switch (src[i/4] >> (2 * (i % 4))) & 3 {
		case 0:
			dst[i] = -1
		case 2:
			dst[i] = 1
		default:
			dst[i] = 0
		}
	}
}

// Base-3 "TQ1" (.h1b v4): 5 weights per byte, byte = d0 + 3d1 + 9d2 + 27d3
// + 81d4 with d = q+1 and d0 the lowest-index weight; rows are padded to a
// multiple of 20 weights with digit 1. Not llama.cpp's TQ1_0.

// RowBytesTQ1H is the packed size of k weights.
func RowBytesTQ1H(k int) int { return (k + 19) / 20 * 4 }

// PackRowTQ1H packs q into dst (RowBytesTQ1H(len(q)) bytes).
func PackRowTQ1H(dst []byte, q []int8) {
	for b := range dst[:RowBytesTQ1H(len(q))] {
		v, mul := 0, 1
		for j := 0; j < 5; j++ {
			d := 1
			if i := 5*b + j; i < len(q) {
				d = int(q[i]) + 1
			}
			v += d * mul
			mul *= 3
		}
		dst[b] = byte(v)
	}
}

// UnpackRowTQ1H decodes len(dst) weights. Bytes ≥ 243 decode to zeros, as
// the reference kernels do.
func UnpackRowTQ1H(dst []int8, src []byte) {
	for b := 0; 5*b < len(dst); b++ {
		v := int(src[b])
		invalid := v >= 243
		for j := 0; j < 5 && 5*b+j < len(dst); j++ {
			if invalid {
				dst[5*b+j] = 0
				continue
			}
			dst[5*b+j] = int8(v%3) - 1
			v /= 3
		}
	}
}
