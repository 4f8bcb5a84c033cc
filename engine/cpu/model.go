package cpu

import (
	"math"
)

// arch is the architecture of a loaded model, whatever format it came from.
type arch struct {
	name                         string // llama, qwen2, qwen3, bitnet
	hidden, ffn, layers          int
	heads, kvHeads, headDim      int
	vocab, ctx                   int
	eps                          float32
	ropeTheta                    float64
	ropeInterleaved              bool      // GGUF llama permutes q/k to interleaved pairs
	ropeFactors                  []float64 // per-frequency divisors (llama3 scaling); nil = 1
	ropeLinear                   float64   // linear position scaling factor (0/1 = off)
	relu2, subNorm, qkNorm, bias bool
	bos                          int // -1 if none
	eos                          []int
}

// layer holds one transformer block's weights.
type layer struct {
	attnNorm, ffnNorm       []float32
	q, k, v, o              linear
	gate, up, down          linear
	qBias, kBias, vBias     []float32
	qNorm, kNorm            []float32 // [headDim], qwen3
	attnSubNorm, ffnSubNorm []float32 // bitnet
}

// embedding is the token embedding table: one row read per token (a
// float view, or a GGUF block type dequantized on lookup), and a linear,
// because a tied head multiplies it.
type embedding interface {
	linear
	row(i int, dst []float32)
}

type weights struct {
	embed  embedding
	norm   []float32
	head   linear
	exact  *exactHead // head form q4x: re-scores head's top logits from the float rows (head4x.go)
	layers []layer
}

// ropeFreqs returns the inverse frequencies θ_i for the rotary pairs.
func (a *arch) ropeFreqs() []float64 {
	half := a.headDim / 2
	f := make([]float64, half)
	for i := range f {
		f[i] = math.Pow(a.ropeTheta, -2*float64(i)/float64(a.headDim))
		if a.ropeFactors != nil {
			f[i] /= a.ropeFactors[i]
		}
		if a.ropeLinear > 1 {
			f[i] /= a.ropeLinear
		}
	}
	return f
}

// llama3Factors implements rope_scaling {"rope_type": "llama3"} (Llama 3.1+):
// low frequencies are divided by factor, high ones kept, smoothed between.
func llama3Factors(freqs []float64, factor, low, high, orig float64) []float64 {
	out := make([]float64, len(freqs))
	lowWave, highWave := orig/low, orig/high
	for i, f := range freqs {
		wave := 2 * math.Pi / f
		switch {
		case wave < highWave:
			out[i] = 1
		case wave > lowWave:
			out[i] = factor
		default:
			smooth := (orig/wave - low) / (high - low)
			out[i] = 1 / ((1-smooth)/factor + smooth)
		}
	}
	return out
}

// rmsnorm runs on one core between the parallel products, in two passes
// (sumSquares, scaleMul) that k has SIMD versions of.
func (k *kernels) rmsnorm(dst, x, w []float32, eps float32) {
	ss := k.sumSquares(x)
	inv := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	k.scaleMul(dst, x, w, inv)
}

func sumSquaresGo(x []float32) float64 {
	// Four partial sums: the additions of one chain wait on each other.
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += float64(v[0]) * float64(v[0])
		s1 += float64(v[1]) * float64(v[1])
		s2 += float64(v[2]) * float64(v[2])
		s3 += float64(v[3]) * float64(v[3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

func scaleMulGo(dst, x, w []float32, inv float32) {
	w = w[:len(x)]
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = v * inv * w[i]
	}
}

func silu(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }
