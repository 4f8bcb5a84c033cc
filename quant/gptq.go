package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/edgectl/edgectl/format/gptq"
	"github.com/edgectl/edgectl/format/half"
)

// GPTQ int4 parameters written by Pack: 4 bits, group 128, symmetric,
// desc_act false, v1 zero points (formats.md §10). The tensors' bit layout
// is format/gptq's.
const (
	GPTQBits      = gptq.Bits
	GPTQGroupSize = 128
	gptqZero      = 8          // symmetric zero point
	GPTQZeroWord  = 0x77777777 // qzeros word: eight (z − 1) = 7 nibbles (format/gptq's Layout.ZeroWord(8))
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
var DefaultGPTQConfig = GPTQConfig{QuantMethod: gptq.MethodGPTQ, Bits: GPTQBits, GroupSize: GPTQGroupSize, Sym: true, CheckpointFormat: gptq.FormatGPTQ}

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

// gptqLayout is the format/gptq layout Pack writes an n × k projection in
// (the bit layout's one home); the sizes were checked by packGPTQ.
func gptqLayout(n, k int) gptq.Layout {
	l, err := DefaultGPTQConfig.layoutConfig().Layout(n, k)
	if err != nil {
		panic(err) // packGPTQ refuses sizes the layout cannot hold first
	}
	return l
}

// layoutConfig is c as format/gptq reads it.
func (c GPTQConfig) layoutConfig() *gptq.Config {
	return &gptq.Config{Method: c.QuantMethod, Bits: c.Bits, GroupSize: c.GroupSize, DescAct: c.DescAct, Sym: c.Sym, Format: c.CheckpointFormat}
}

// gptqTensor is one projection quantized in memory: codes packed as
// qweight [K/8, N] (little-endian int32 words) and scales [G, N] F16.
type gptqTensor struct {
	lay     gptq.Layout
	n, k, g int
	qweight []byte
	scales  []byte
}

func newGPTQTensor(n, k int) *gptqTensor {
	lay := gptqLayout(n, k)
	g := lay.Groups()
	return &gptqTensor{lay: lay, n: n, k: k, g: g, qweight: make([]byte, 4*(k/8)*n), scales: make([]byte, 2*g*n)}
}

// putRow stores output row n: its codes (len k) go to column n of
// qweight (format/gptq's layout), its scales to column n of scales.
func (t *gptqTensor) putRow(n int, q []uint8, sc []uint16) {
	t.lay.PutCodes(t.qweight, n, q)
	for g, s := range sc {
		binary.LittleEndian.PutUint16(t.scales[2*(g*t.n+n):], s)
	}
}

// UnpackGPTQ dequantizes GPTQ v1 tensors back to HF layout W[n][k]
// (tests, doctor) through format/gptq. qweight is [K/8, N] words, qzeros
// [G, N/8], scales [G, N] F16, gIdx [K].
func UnpackGPTQ(qweight, qzeros []uint32, scales []uint16, gIdx []int32, n, k int) []float32 {
	words := func(w []uint32) []byte {
		b := make([]byte, 4*len(w))
		for i, v := range w {
			binary.LittleEndian.PutUint32(b[4*i:], v)
		}
		return b
	}
	sc := make([]float32, len(scales))
	for i, h := range scales {
		sc[i] = half.F16ToF32(h)
	}
	w := make([]float32, n*k)
	gptqLayout(n, k).Dequantize(w, words(qweight), words(qzeros), sc, gIdx, 0, n)
	return w
}
