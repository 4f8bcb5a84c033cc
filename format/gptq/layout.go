package gptq

import (
	"encoding/binary"
	"fmt"
)

// Layout is one linear layer's tensor layout: W is N × K (out_features ×
// in_features, Hugging Face's weight shape), in groups of GroupSize inputs.
// Its methods read and write the packed tensors as little-endian bytes
// (safetensors' I32 data), output row by output row.
type Layout struct {
	AWQ       bool
	N, K      int
	GroupSize int // resolved: K where the config says −1
	// ZeroOffset is what the stored zero nibble lacks: 1 for GPTQ v1
	// (stored z − 1), 0 for GPTQ v2 and AWQ.
	ZeroOffset int
}

// awqOrder is AWQ's nibble order: nibble i of a word holds output
// 8c + awqOrder[i]; awqSlot inverts it.
var (
	awqOrder = [8]int{0, 2, 4, 6, 1, 3, 5, 7}
	awqSlot  = [8]int{0, 4, 1, 5, 2, 6, 3, 7}
)

// Layout is c's layout for an N × K weight, or an error saying which
// dimension the packing cannot hold.
func (c *Config) Layout(n, k int) (Layout, error) {
	l := Layout{AWQ: c.Method == MethodAWQ, N: n, K: k, GroupSize: c.GroupSize}
	if l.GroupSize < 0 || l.GroupSize > k {
		l.GroupSize = k
	}
	if c.Method == MethodGPTQ && c.Format == FormatGPTQ {
		l.ZeroOffset = 1
	}
	switch {
	case n <= 0 || k <= 0 || l.GroupSize <= 0:
		return l, fmt.Errorf("a %d × %d weight has no %s layout", n, k, c.Method)
	case n%8 != 0:
		return l, fmt.Errorf("out_features %d is not a multiple of 8: %s packs 8 zero points per int32", n, c.Method)
	case !l.AWQ && k%8 != 0:
		return l, fmt.Errorf("in_features %d is not a multiple of 8: GPTQ packs 8 inputs per int32", k)
	case l.AWQ && k%l.GroupSize != 0:
		return l, fmt.Errorf("in_features %d is not a multiple of group_size %d, which AWQ requires", k, l.GroupSize)
	}
	return l, nil
}

// Groups is the number of groups per output row: ceil(K / GroupSize).
func (l Layout) Groups() int { return (l.K + l.GroupSize - 1) / l.GroupSize }

// QWeightShape is qweight's shape: GPTQ [K/8, N], AWQ [K, N/8].
func (l Layout) QWeightShape() []int64 {
	if l.AWQ {
		return []int64{int64(l.K), int64(l.N / 8)}
	}
	return []int64{int64(l.K / 8), int64(l.N)}
}

// QZerosShape is qzeros' shape, [G, N/8].
func (l Layout) QZerosShape() []int64 { return []int64{int64(l.Groups()), int64(l.N / 8)} }

// ScalesShape is scales' shape, [G, N].
func (l Layout) ScalesShape() []int64 { return []int64{int64(l.Groups()), int64(l.N)} }

// GIdxShape is g_idx's shape, [K] (GPTQ only).
func (l Layout) GIdxShape() []int64 { return []int64{int64(l.K)} }

func word(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }

// nibbleOf is where output n's nibble lies in the words of a qzeros row
// (and, for AWQ, a qweight row): word n/8, bit shift.
func (l Layout) nibbleOf(n int) (w int, shift uint) {
	if l.AWQ {
		return n / 8, uint(4 * awqSlot[n%8])
	}
	return n / 8, uint(4 * (n % 8))
}

// Codes writes the 4-bit codes of output rows [r0, r1) into dst, row by
// row: dst[(r−r0)·K + k] is input k's code. qweight is the tensor's bytes
// (len(qweight) ≥ 4·K·N/8, checked by the caller against QWeightShape).
func (l Layout) Codes(dst []uint8, qweight []byte, r0, r1 int) {
	K, N := l.K, l.N
	dst = dst[:(r1-r0)*K]
	if l.AWQ {
		for k := range K {
			for r := r0; r < r1; r++ {
				w, sh := l.nibbleOf(r)
				dst[(r-r0)*K+k] = uint8(word(qweight, k*(N/8)+w) >> sh & 15)
			}
		}
		return
	}
	for kw := range K / 8 {
		for r := r0; r < r1; r++ {
			binary.LittleEndian.PutUint64(dst[(r-r0)*K+8*kw:], spreadNibbles(word(qweight, kw*N+r)))
		}
	}
}

// spreadNibbles returns v's eight nibbles as the eight bytes of a
// little-endian uint64, nibble i in byte i.
func spreadNibbles(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	return (x | x<<4) & 0x0f0f0f0f0f0f0f0f
}

// Zeros writes the zero points of output rows [r0, r1): dst[(r−r0)·G + g]
// is z, the value the dequantization subtracts (GPTQ v1: the stored nibble
// + 1, so 1…16).
func (l Layout) Zeros(dst []uint8, qzeros []byte, r0, r1 int) {
	G, N := l.Groups(), l.N
	for g := range G {
		for r := r0; r < r1; r++ {
			w, sh := l.nibbleOf(r)
			dst[(r-r0)*G+g] = uint8(word(qzeros, g*(N/8)+w)>>sh&15) + uint8(l.ZeroOffset)
		}
	}
}

// GroupIndex decodes g_idx (int32 [K] bytes) and checks each entry is a
// group of the layer; raw nil (AWQ, or a GPTQ file without g_idx) gives
// the default k / GroupSize.
func (l Layout) GroupIndex(raw []byte) ([]int32, error) {
	g := make([]int32, l.K)
	if raw == nil {
		for k := range g {
			g[k] = int32(k / l.GroupSize)
		}
		return g, nil
	}
	G := int32(l.Groups())
	for k := range g {
		g[k] = int32(word(raw, k))
		if g[k] < 0 || g[k] >= G {
			return nil, fmt.Errorf("g_idx[%d] = %d is not one of the %d groups", k, g[k], G)
		}
	}
	return g, nil
}

// Dequantize writes W[r][k] = scales[g][r]·(q − z), g = gIdx[k], for
// output rows [r0, r1) into dst[(r−r0)·K + k]; scales is [G, N] decoded
// to float32, gIdx as GroupIndex returns it.
func (l Layout) Dequantize(dst []float32, qweight, qzeros []byte, scales []float32, gIdx []int32, r0, r1 int) {
	K, G := l.K, l.Groups()
	codes := make([]uint8, (r1-r0)*K)
	zeros := make([]uint8, (r1-r0)*G)
	l.Codes(codes, qweight, r0, r1)
	l.Zeros(zeros, qzeros, r0, r1)
	for r := r0; r < r1; r++ {
		for k := range K {
			g := int(gIdx[k])
			dst[(r-r0)*K+k] = scales[g*l.N+r] * float32(int(codes[(r-r0)*K+k])-int(zeros[(r-r0)*G+g]))
		}
	}
}

// PutCodes stores output row r's codes (len K, each < 16) into qweight.
func (l Layout) PutCodes(qweight []byte, r int, codes []uint8) {
	K, N := l.K, l.N
	if l.AWQ {
		w, sh := l.nibbleOf(r)
		for k, c := range codes[:K] {
			i := 4 * (k*(N/8) + w)
			v := binary.LittleEndian.Uint32(qweight[i:])
			binary.LittleEndian.PutUint32(qweight[i:], v&^(15<<sh)|uint32(c&15)<<sh)
		}
		return
	}
	for kw := range K / 8 {
		var v uint32
		for i, c := range codes[8*kw : 8*kw+8] {
			v |= uint32(c&15) << (4 * i)
		}
		binary.LittleEndian.PutUint32(qweight[4*(kw*N+r):], v)
	}
}

// PutZeros stores output row r's zero points (len G; GPTQ v1 stores
// z − 1, so z = 0 cannot be written in v1 and reads back as 16).
func (l Layout) PutZeros(qzeros []byte, r int, z []uint8) {
	G, N := l.Groups(), l.N
	w, sh := l.nibbleOf(r)
	for g, v := range z[:G] {
		i := 4 * (g*(N/8) + w)
		old := binary.LittleEndian.Uint32(qzeros[i:])
		s := uint32(v-uint8(l.ZeroOffset)) & 15
		binary.LittleEndian.PutUint32(qzeros[i:], old&^(15<<sh)|s<<sh)
	}
}

// ZeroWord is a qzeros word whose eight outputs all have zero point z
// (symmetric GPTQ v1, z = 8: 0x77777777).
func (l Layout) ZeroWord(z uint8) uint32 {
	return uint32(z-uint8(l.ZeroOffset)) & 15 * 0x11111111
}

// PutGroupIndex stores g_idx (int32 [K]) into dst.
func PutGroupIndex(dst []byte, gIdx []int32) {
	for k, g := range gIdx {
		binary.LittleEndian.PutUint32(dst[4*k:], uint32(g))
	}
}
