package cpu

// gptqKernels are the GPTQ/AWQ int4 row products (gptq_linear.go has the
// layout): rows writes out[i] = Σ_g s_g·Σ_b d_b·(Σ c·q) + m_g·X_g for
// len(out) consecutive rows of w (each groups × blocks × 16 bytes) and sm
// (2 floats per group: s, m) against one activation row x. SIMD versions
// sum the same terms in another order (and fused): agreement to rounding.
type gptqKernels struct {
	rows func(w []byte, sm []float32, x gptqX, out []float32)
}

// gptqRowsGo is the portable kernel: per 32-block the exact integer
// Σ c·q, times the block's d_x, summed over the group in float32, times
// s_g; plus m_g·X_g.
func gptqRowsGo(w []byte, sm []float32, x gptqX, out []float32) {
	G := len(x.xg)
	if G == 0 {
		clear(out)
		return
	}
	B := len(x.d) / G
	rb := G * B * 16
	for i := range out {
		row, s := w[i*rb:(i+1)*rb], sm[i*2*G:(i+1)*2*G]
		var acc, zacc float32
		for g := range G {
			var ga float32
			for b := g * B; b < (g+1)*B; b++ {
				ga += float32(gptqBlockDot(row[16*b:16*b+16], x.q[32*b:32*b+32])) * x.d[b]
			}
			acc += s[2*g] * ga
			zacc += s[2*g+1] * x.xg[g]
		}
		out[i] = acc + zacc
	}
}

// gptqBlockDot is Σ c·q over one block: byte j holds slot j's code in its
// low nibble and slot j+16's in its high one.
func gptqBlockDot(blk []byte, q []int8) int32 {
	blk, q = blk[:16], q[:32]
	var s int32
	for j, c := range blk {
		s += int32(c&15)*int32(q[j]) + int32(c>>4)*int32(q[j+16])
	}
	return s
}
