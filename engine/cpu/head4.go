package cpu

import (
	"fmt"

	"github.com/edgectl/edgectl/format/gguf"
)

// The 4-bit LM head (head form "q4"). A float head is quantized at load
// into a GGUF block type the engine already multiplies, not into a format
// of its own: the block types have kernels in every table (portable,
// AVX2, NEON with and without SDOT, quant_kernels.go), tested against
// their dequantization, and a quantizer (format/gguf Quantize). The head
// is then a quantLinear like any matrix of a Q4_K_M file.
//
// Q4_K is the type (docs/engine.md, "Smaller head", has the numbers): of
// the 4.5-bit types it has the fastest one-token AVX2 kernel (6.5 ns per
// 256 weights from cache against 10.4 for Q4_0 and 10.7 for IQ4_NL), its
// logits are as close to the float head's as IQ4_NL's and closer than
// Q4_0's (TestHead4TypeChoice), and its activations are Q8_K blocks — a
// scale per 256 inputs, finer than the int8 head's one per row. A 4.0-bit
// format with one scale per row would read 11% less of the head (3% of a
// BitNet-2B token), but its logits are twice as far from the float
// head's and it would need kernels of its own. A head whose rows do not
// fill Q4_K's super-blocks of 256 takes Q4_0 (blocks of 32); narrower
// ones keep the int8 head. Q4_K rows are written by quantRowQ4K
// (head4_quant.go), Q4_0 rows by gguf.Quantize.

// head4Type is the block type of a 4-bit head of c columns.
func head4Type(c int) (gguf.Type, bool) {
	for _, t := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ4_0} {
		if c > 0 && int64(c)%t.BlockSize() == 0 {
			return t, true
		}
	}
	return 0, false
}

// quantizeHead4 builds the 4-bit copy of a float head in type t, on all
// cores, straight into anonymous memory (one row of floats per worker,
// never a second float copy). As quantizeHead does, it drops each chunk's
// mapped pages of f after reading them.
func quantizeHead4(f *floatRows, t gguf.Type, mem *arena) (*quantLinear, error) {
	if int64(f.c)%t.BlockSize() != 0 {
		return nil, fmt.Errorf("4-bit LM head: its %d columns are not a multiple of the %s block size %d (EDGECTL_HEAD=q8 keeps an int8 head)", f.c, t, t.BlockSize())
	}
	rb := int(t.RowSize(int64(f.c)))
	raw := mem.alloc(f.r * rb)
	f.eachRowOnce(func(r int, row []float32) {
		quantizeRow4(t, row, raw[r*rb:(r+1)*rb])
	})
	return newQuantLinear(raw, t, f.r, f.c)
}

// quantizeRow4 writes row in type t to dst (t.RowSize(len(row)) bytes;
// head4Type's types only, whose block sizes quantizeHead4 checked).
func quantizeRow4(t gguf.Type, row []float32, dst []byte) {
	if t == gguf.TypeQ4_K {
		quantRowQ4K(row, dst)
		return
	}
	q, _ := gguf.Quantize(t, row)
	copy(dst, q)
}

// ternaryHead is the head form models whose layers are ternary get by
// default: "q4x", the 4-bit head (185 MB a BitNet-2B token instead of the
// int8 head's 328) with its top candidates re-scored exactly (head4x.go),
// because its greedy text is the float head's, all 64 tokens, on every
// fixture (TestHead4xGreedyMatchesFloat). Plain "q4" is not: its logits
// are ~10% of their range from the float head's (the int8 head's ~1.3%),
// and its text parts from the int8 head's after 0–25 of 48 tokens on the
// generated models, 19 on TinyStories (TestHead4GreedyMatchesInt8).
const ternaryHead = "q4x"

// compactHead is float head f held in form ("q4x", "q4" or "q8"), or nil for
// "float" (the file's dtype). A head too narrow for the 4-bit types gets
// the int8 one.
func compactHead(f *floatRows, form string, mem *arena) linear {
	switch form {
	case "q4", "q4x": // q4x re-scores candidates on top (head4x.go)
		if t, ok := head4Type(f.c); ok {
			if l, err := quantizeHead4(f, t, mem); err == nil {
				return l
			}
		}
		return quantizeHead(f, mem)
	case "q8":
		return quantizeHead(f, mem)
	}
	return nil
}
