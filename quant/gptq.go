package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/edgectl/edgectl/format/half"
)

// GPTQ int4 parameters written by Pack: 4 bits, group 128, symmetric,
// desc_act false (formats.md §10).
const (
	GPTQBits      = 4
	GPTQGroupSize = 128
	gptqZero      = 8          // symmetric zero point
	GPTQZeroWord  = 0x77777777 // qzeros word: eight (z − 1) = 7 nibbles
)

// GPTQConfig is the quantization_config written into config.json (and
// quantize_config.json).
type GPTQConfig struct {
	QuantMethod      string `json:"quant_method"`
	Bits             int    `json:"bits"`
	GroupSize        int    `json:"group_size"`
	DescAct          bool   `json:"desc_act"`
	Sym              bool   `json:"sym"`
	CheckpointFormat string `json:"checkpoint_format"`
}

// DefaultGPTQConfig describes what Pack writes.
var DefaultGPTQConfig = GPTQConfig{QuantMethod: "gptq", Bits: GPTQBits, GroupSize: GPTQGroupSize, Sym: true, CheckpointFormat: "gptq"}

// GPTQRowScales computes the fp16 scales of one output row (column n of
// GPTQ's [G, N] scales): 2·max|w|/15 per group of 128 inputs, or 2/15 for an
// all-zero group, as IST-DASLab's quantizer does for symmetric groups that
// hold a negative value. (That reference leaves all-non-negative groups
// asymmetric, xmax/15, which clips them; edgectl is symmetric everywhere.)
func GPTQRowScales(dst []uint16, w []float32) error {
	for g := range dst {
		var amax float32
		for _, v := range w[g*GPTQGroupSize : min(len(w), (g+1)*GPTQGroupSize)] {
			a := abs32(v)
			if !(a <= math.MaxFloat32) {
				return &RowError{g * GPTQGroupSize, fmt.Sprintf("group %d holds a non-finite value (NaN/Inf)", g)}
			}
			amax = max(amax, a)
		}
		s := 2 * amax / 15
		if amax == 0 {
			s = 2.0 / 15
		}
		h := half.F32ToF16(s)
		if math.IsInf(float64(half.F16ToF32(h)), 0) {
			return &RowError{g * GPTQGroupSize, fmt.Sprintf("group scale %g overflows fp16", s)}
		}
		dst[g] = h
	}
	return nil
}

// roundMagic is 1.5·2^23: adding and subtracting it rounds a float32 of
// magnitude < 2^22 to an integer, half to even, in the default rounding
// mode — torch.round without a call per element.
const roundMagic = 12582912

// GPTQRowCodes quantizes one output row with its fp16 scales:
// q = clamp(round(w/s) + 8, 0, 15), rounding half to even like torch.round.
// Dividing by the stored (fp16) scale keeps quantization consistent with
// the dequantization consumers do.
func GPTQRowCodes(q []uint8, w []float32, scales []uint16) {
	for g, h := range scales {
		s := half.F16ToF32(h)
		lo, hi := g*GPTQGroupSize, min(len(w), (g+1)*GPTQGroupSize)
		for k, v := range w[lo:hi] {
			x := v / s
			var r float32
			if abs32(x) < 1<<22 {
				r = float32(float32(x+roundMagic) - roundMagic)
			} else {
				r = x // far outside the clamp either way
			}
			r = min(15, max(0, r+gptqZero))
			q[lo+k] = uint8(r)
		}
	}
}

// gptqTensor is one projection quantized in memory: codes packed as
// qweight [K/8, N] (little-endian int32 words) and scales [G, N] F16.
type gptqTensor struct {
	n, k, g int
	qweight []byte
	scales  []byte
}

func newGPTQTensor(n, k int) *gptqTensor {
	g := (k + GPTQGroupSize - 1) / GPTQGroupSize
	return &gptqTensor{n: n, k: k, g: g, qweight: make([]byte, 4*(k/8)*n), scales: make([]byte, 2*g*n)}
}

// putRow stores output row n: its codes (len k) go to column n of
// qweight, nibble i of word (r, n) holding input 8r+i.
func (t *gptqTensor) putRow(n int, q []uint8, sc []uint16) {
	for r := 0; r < t.k/8; r++ {
		var word uint32
		for i := 0; i < 8; i++ {
			word |= uint32(q[8*r+i]&15) << (4 * i)
		}
		binary.LittleEndian.PutUint32(t.qweight[4*(r*t.n+n):], word)
	}
	for g, s := range sc {
		binary.LittleEndian.PutUint16(t.scales[2*(g*t.n+n):], s)
	}
}

// UnpackGPTQ dequantizes GPTQ tensors back to HF layout W[n][k] (tests,
// doctor). qweight is [K/8, N] words, qzeros [G, N/8], scales [G, N] F16,
// gIdx [K].
func UnpackGPTQ(qweight, qzeros []uint32, scales []uint16, gIdx []int32, n, k int) []float32 {
	w := make([]float32, n*k)
	for kk := 0; kk < k; kk++ {
		g := int(gIdx[kk])
		for c := 0; c < n; c++ {
			q := (qweight[(kk/8)*n+c] >> (4 * (kk % 8))) & 15
			z := (qzeros[g*(n/8)+c/8]>>(4*(c%8)))&15 + 1
			w[c*k+kk] = half.F16ToF32(scales[g*n+c]) * float32(int(q)-int(z))
		}
	}
	return w
}
