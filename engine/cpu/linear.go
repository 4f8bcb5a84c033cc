package cpu

import "math"

// linear is a weight matrix W [rows × cols] (cols = K, the input size) that
// computes out = W·x for a batch of activation rows. Float matrices read
// acts.f; ternary ones read the int8 form (quantized once per batch, shared
// by every matrix that takes the same input, as BitNet does).
type linear interface {
	rows() int
	cols() int
	// int8 reports whether mul reads the int8 activations.
	int8() bool
	// mul writes out[t*ldo + r] for rows r in [r0, r1) and every token t.
	mul(out []float32, ldo int, a *acts, r0, r1 int)
	// size is the bytes of weights mul reads for one full product.
	size() int64
	// format names the packing for ModelInfo ("F32", "TQ2_0", "sherry", …).
	format() string
}

// acts is a batch of n activation rows of width k, with their int8
// quantization computed on demand, for one kernel table: kern quantizes
// them, in the layouts its kernels read (permuted for the AVX-512 I2
// kernels, unsigned for the VNNI head), and the products multiply them
// with kern's kernels (the model's table: newState sets it).
type acts struct {
	kern  *kernels
	n, k  int
	f     []float32 // n*k
	q     []int8    // n*k, valid when quantized
	qp    []int8    // q in permuteI2 order, when the I2 kernels want it
	qu    []byte    // q+128 as unsigned bytes, when the Q8 kernel wants it
	scale []float32 // per row: x ≈ q·scale
	// bsum holds Σq per 256-wide block, per row (n × ceil(k/256)); total
	// the row sums. Ternary codes are stored as w+1, so kernels compute
	// Σ(c−1)q = Σcq − Σq and need these.
	bsum  []int32
	total []int32
	quant bool
	quOK  bool // qu is filled (only the int8 head reads it)
	// lutGen names this quantized batch for the Sherry lookup products'
	// tables (sherry_lut.go), drawn when lutOK is set.
	lutGen uint64
	lutOK  bool
	// blocks are the block-int8 forms the GGUF block types read
	// (quant_acts.go), each computed on demand.
	blocks [numBlockForms]blockActs
	// gptq holds the GPTQ/AWQ products' forms (gptq_linear.go).
	gptq gptqActs
}

func (a *acts) reset(n, k int) {
	a.n, a.k, a.quant, a.quOK, a.lutOK = n, k, false, false, false
	for f := range a.blocks {
		a.blocks[f].ok = false
	}
	a.gptq.live = 0
	a.f = grow(a.f, n*k)
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// quantize computes the per-row absmax int8 form: scale = max|x|/127,
// q = round(x/scale), as BitNet's activation quantizer (ties away from
// zero, like C's roundf that 1bit-systems and llama.cpp use).
func (a *acts) quantize() {
	if a.quant {
		return
	}
	a.quant, a.lutOK = true, false
	nb := (a.k + 255) / 256
	a.q = grow(a.q, a.n*a.k)
	a.scale = grow(a.scale, a.n)
	a.bsum = grow(a.bsum, a.n*nb)
	a.total = grow(a.total, a.n)
	// The I2 kernels' permuted copy is written along with q (full
	// 256-blocks only; it is read only when k is a multiple of 256).
	kern := a.kern
	perm := kern.i2Permuted && a.k%256 == 0
	if perm {
		a.qp = grow(a.qp, a.n*a.k)
	}
	for t := range a.n {
		x := a.f[t*a.k : (t+1)*a.k]
		q := a.q[t*a.k : (t+1)*a.k]
		bsum := a.bsum[t*nb : (t+1)*nb]
		m := max(kern.absMax(x), 1e-5)
		a.scale[t] = m / 127
		inv := 127 / m
		full := a.k / 256
		var qp []int8
		if perm {
			qp = a.qp[t*a.k : (t+1)*a.k]
		}
		kern.quantBlocks(x[:full*256], inv, q[:full*256], qp, bsum[:full])
		if full < nb {
			quantBlocksGo(x[full*256:], inv, q[full*256:], nil, bsum[full:])
		}
		var tot int32
		for _, s := range bsum {
			tot += s
		}
		a.total[t] = tot
	}
	a.quOK = false
}

func absMaxGo(x []float32) float32 {
	m := float32(0)
	for _, v := range x {
		m = max(m, abs32(v))
	}
	return m
}

func quantBlocksGo(x []float32, inv float32, q, qp []int8, bsum []int32) {
	for b := range bsum {
		var s int32
		for i := b * 256; i < min(len(x), (b+1)*256); i++ {
			v := int32(math.Round(float64(x[i] * inv)))
			v = max(-127, min(127, v))
			q[i] = int8(v)
			s += v
		}
		bsum[b] = s
	}
	if qp != nil {
		permuteI2(qp, q[:len(x)])
	}
}

// prepare computes the forms of a that w's product reads, before the
// product is dispatched to the workers.
func (a *acts) prepare(w linear) {
	if w.int8() {
		a.quantize()
	}
	if s, ok := w.(*scaledLinear); ok {
		w = s.linear
	}
	if q, ok := w.(*quantLinear); ok {
		a.quantizeBlocks(q.form)
		if a.kern.quant[q.qt].nibbles {
			a.nibbles()
		}
	}
	if g, ok := w.(*gptqLinear); ok {
		a.prepareGPTQ(g.lay)
	}
	if _, ok := w.(*q8Linear); ok && a.kern.q8.unsigned {
		a.unsigned() // q+128, read by the VNNI head kernel
	}
	if t, ok := w.(*ternLinear); ok && t.kind == "sherryT" {
		a.sherryLUTPrepare() // the lookup layout's per-core tables
	}
}

// unsigned fills qu (q+128) for the VNNI int8 head. It runs before a
// product is dispatched, not in quantize, because only the head reads it.
func (a *acts) unsigned() {
	a.quantize()
	if a.quOK {
		return
	}
	a.quOK = true
	a.qu = grow(a.qu, a.n*a.k)
	for i, v := range a.q[:a.n*a.k] {
		a.qu[i] = byte(v) ^ 0x80
	}
}

// i2q is the activation view the I2 kernels read.
func (a *acts) i2q() []int8 {
	if a.kern.i2Permuted {
		return a.qp
	}
	return a.q
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func dotF32Go(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
