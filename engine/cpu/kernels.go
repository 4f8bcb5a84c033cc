package cpu

// The kernel table. Every compute kernel the engine runs (each weight
// type's row products, the activation quantizer, the passes between the
// products, attention) is chosen once, when a model loads, by one
// constructor, newKernels, from the CPU's features less what the settings
// turn off. The model holds the table and nothing changes it afterwards:
// there are no kernel variables to reassign, so no init order to get
// wrong, and tests build a table for every feature set the CPU has and
// compare each against the portable one. ggml's per-type traits are the
// model: one entry per weight type.

// cpuFeatures are the instruction-set extensions the SIMD kernels need.
// Each one counts only together with the one before it (AVX-512 without
// AVX2 selects nothing).
type cpuFeatures struct {
	avx2    bool // amd64: AVX2, FMA and F16C
	avx512  bool // amd64: AVX-512 F and BW
	vnni    bool // amd64: AVX-512 VNNI
	vbmi    bool // amd64: AVX-512 VBMI and GFNI
	neon    bool // arm64: ASIMD
	dotProd bool // arm64: the dot-product extension (SDOT)
}

// kernels is one feature set's choice of every kernel. Entries a set has
// no SIMD version of hold the portable Go kernel; the entries documented
// as optional are nil where the set has no kernel of that shape, and
// their callers loop over a simpler one.
type kernels struct {
	// name says which set this is ("go", "avx2", "avx512", "avx512vnni",
	// "neon", "neon-dotprod"); benchmarks report it.
	name string

	// Weight types: the ternary packings (indexed by ternType, which a
	// ternLinear holds: one array index per product), the GGUF block
	// types (indexed by quantType: Q8_0, Q4_K, …; quant_kernels.go; SIMD
	// ones agree with the portable ones to rounding), the int8 head, and
	// the float dtypes' dot products (SIMD F32/F16 agree with the portable
	// ones to rounding: FMA and another summation order).
	tern  [numTernTypes]ternKernels
	quant [numQuantTypes]quantKernels
	// sherryNative says the table's Sherry kernels decode the 1.25-bit
	// rows faster than the I2x4 repack (AVX-512 VBMI: 1.2× on the
	// 12-layer model, docs/engine.md "Sherry as stored"), so the load
	// keeps Sherry at its own width (repackFor): in the lookup layout
	// where sherryLUT is set, else as stored.
	sherryNative bool
	// sherryLUT, where set, multiplies Sherry matrices in the lookup
	// layout the load then moves them to (sherry_lut.go).
	sherryLUT       *sherryLUTKernels
	q8              q8Kernels
	gptq            gptqKernels // GPTQ/AWQ int4 (gptq_kernels.go); SIMD to rounding
	dotF32          func(a, b []float32) float32
	dotF16, dotBF16 func(w []byte, x []float32) float32
	// gemm is the float dtypes' prefill product (a batch of tokens;
	// gemm.go), to rounding as the portable one.
	gemm floatGemm

	// The activations' int8 form: absMax is max|x|; quantBlocks writes
	// q = round(x·inv) (ties away from zero, clamped to ±127), the sum of
	// each 256-wide block of q into bsum (the last block may be short)
	// and, when qp is not nil, q in permuteI2 order. SIMD versions match
	// the portable ones exactly. i2Permuted says the I2 kernels read
	// acts.qp instead of acts.q.
	absMax      func(x []float32) float32
	quantBlocks func(x []float32, inv float32, q, qp []int8, bsum []int32)
	i2Permuted  bool

	// rmsnorm's two passes: sumSquares is Σ x² in float64 (SIMD in
	// another order: agreement to rounding), scaleMul dst[i] =
	// x[i]·inv·w[i] (bit for bit; dst may be x). relu2Mul sets g[i] =
	// max(g[i], 0)²·u[i] (BitNet's gate; bit for bit): decoding, it runs
	// on the caller between two products, on 6912 values a layer.
	sumSquares func(x []float32) float64
	scaleMul   func(dst, x, w []float32, inv float32)
	relu2Mul   func(g, u []float32)
	// siluMul sets g[i] = silu(g[i])·u[i] (SwiGLU's gate, on F values a
	// layer per token: with one float64 exp each it took ~10% of a float
	// prefill). SIMD versions use a float32 polynomial exp (≈1 ulp), so
	// they agree with the portable one to rounding.
	siluMul func(g, u []float32)

	// Softmax and attention. maxF32 is the largest of x (−Inf when empty;
	// NaN-free input), exact. expSubSum sets x[i] = e^(x[i]−mx) and
	// returns their sum; SIMD versions use a float32 polynomial exp
	// (≈1 ulp), so they agree to rounding. axpyF32 is y += a·x (len(x) ≥
	// len(y)); FMA rounds once where the portable loop rounds twice.
	maxF32    func(x []float32) float32
	expSubSum func(x []float32, mx float32) float32
	axpyF32   func(a float32, x, y []float32)
	// Optional: one head of attention for headDim 128 in one call each,
	// out[p] = (q·k_p)·scale over n positions stride floats apart and
	// o = Σ_p w[p]·v_p; attnScores4 and attnMix4 do the same for four
	// query heads at once (q: 4×128; out and w: four rows ldo/ldw apart;
	// o: 4×128), reading each key and value row once for the four.
	attnScores  func(q, k []float32, stride, n int, scale float32, out []float32)
	attnMix     func(w, v []float32, stride, n int, o []float32)
	attnScores4 func(q, k []float32, stride, n int, scale float32, out []float32, ldo int)
	attnMix4    func(w []float32, ldw int, v []float32, stride, n int, o []float32)

	// readSum loads every cache line of b as fast as a core can;
	// benchmarks use it to measure read bandwidth.
	readSum func(b []byte) uint64
}

// ternKernels are one ternary weight type's row products, on int8
// activations q with total = Σq (codes are stored as w+1, so a kernel
// computes Σ (c−1)·q = Σ c·q − total). Every SIMD version gives the
// portable one's result bit for bit.
type ternKernels struct {
	// blockDot (block-scaled types: TQ2_0, TQ1_0) returns Σ_b d_b·(Σ w·q)
	// over one row, bsum holding Σq per 256-block; dot (row-scaled types)
	// the exact Σ w·q of one row. A type has one of the two.
	blockDot func(row []byte, q []int8, bsum []int32) float32
	dot      func(row []byte, q []int8, total int32) int32
	// Optional, for the I2 layouts (see repack.go). dot4 is dot for four
	// activation rows k apart in q. rows computes the decode products of
	// len(out) consecutive rows against one activation row in one call:
	// out[i] = float32(Σ w·q) · scale[i] · xs. dot4x2 (I2) is dot4 for
	// two rows stride bytes apart (out[0:4] the first row's), dot4x4
	// (I2x4) for a whole group of four rows (out[4r+t]); prefill prefers
	// them.
	dot4   func(row []byte, q []int8, k int, totals []int32, out *[4]int32)
	rows   func(rows []byte, q []int8, total int32, xs float32, scale, out []float32)
	dot4x2 func(rows []byte, stride int, q []int8, k int, totals []int32, out *[8]int32)
	dot4x4 func(group []byte, q []int8, k int, totals []int32, out *[16]int32)
	// rows4 (Sherry in its file layout; sherry_kernels.go) is prefill's
	// rows: out[4r+t] = Σ w·q of row r and activation row t, for the
	// len(out)/4 consecutive rows and four activation rows k apart in q.
	rows4 func(rows []byte, q []int8, k int, totals []int32, out []int32)
}

// q8Kernels are the int8 head's (q8Linear) products: dot is Σ w·x over one
// row. Where unsigned is set, the activations also come as xu = x+128
// (acts.qu) and dotU takes them (wsum: Σ of the row's first len&^63
// codes, the offset to subtract); rowsU, optional, writes Σ_{i<k&^63}
// w·xu for len(out) consecutive k-wide rows (decode: one call per chunk of
// rows). rows, optional and only where unsigned is not set, writes the
// signed Σ w·x of len(out) consecutive rows.
type q8Kernels struct {
	dot      func(w, x []int8) int32
	unsigned bool
	dotU     func(w []int8, xu []byte, x []int8, wsum int32) int32
	rowsU    func(w []int8, k int, xu []byte, out []int32)
	rows     func(w []int8, k int, x []int8, out []int32)
}

// newKernels builds the table for a CPU with features f: the portable
// kernels, then the SIMD ones f allows (addSIMD, one per architecture).
func newKernels(f cpuFeatures) *kernels {
	k := &kernels{
		name: "go",
		tern: [numTernTypes]ternKernels{
			typeTQ2:    {blockDot: tq2DotGo},
			typeTQ1:    {blockDot: tq1Dot},
			typeHALO2:  {dot: halo2Dot},
			typeTQ1H:   {dot: base3Dot},
			typeSherry: {dot: sherryDot},
			typeI2:     {dot: i2DotGo},
			typeB3:     {dot: b3DotGo}, // base3.go; the SIMD tables add rows
			// typeI2x4: no portable kernels; repack writes it only for
			// tables that have them (hasI2x4).
		},
		q8:          q8Kernels{dot: q8DotGo},
		gptq:        gptqKernels{rows: gptqRowsGo},
		dotF32:      dotF32Go,
		dotF16:      dotF16Go,
		dotBF16:     dotBF16,
		gemm:        portableGemm,
		absMax:      absMaxGo,
		quantBlocks: quantBlocksGo,
		sumSquares:  sumSquaresGo,
		scaleMul:    scaleMulGo,
		relu2Mul:    relu2MulGo,
		siluMul:     siluMulGo,
		maxF32:      maxF32Go,
		expSubSum:   expSubSumGo,
		axpyF32:     axpyF32Go,
		readSum:     readSumGo,
	}
	for i, q := range quantTypes {
		k.quant[i].rows = rowsOf(q.dot)
	}
	addSIMD(k, f)
	return k
}

// hasI2x4 says the set has the kernels the I2x4 layout needs, so repack
// may write it.
func (k *kernels) hasI2x4() bool {
	x := &k.tern[typeI2x4]
	return x.rows != nil && x.dot != nil && x.dot4 != nil
}

func readSumGo(b []byte) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+32 <= len(b); i += 32 {
		s0 += uint64(b[i]) | uint64(b[i+8])<<8
		s1 += uint64(b[i+16])
		s2 += uint64(b[i+24])
		s3 ^= uint64(b[i+31])
	}
	return s0 + s1 + s2 + s3
}
