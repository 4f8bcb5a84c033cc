package cpu

import (
	"fmt"

	"github.com/edgectl/edgectl/format/gguf"
)

// The block-quantized LM heads (head forms "q4", "q4x", "q3x", "q2x"). A
// float head is quantized at load into a GGUF block type the engine
// already multiplies, not into a format of its own: the block types have
// kernels in every table (portable, AVX2, NEON with and without SDOT,
// quant_kernels.go), tested against their dequantization, and a quantizer
// (format/gguf Quantize). The head is then a quantLinear like any matrix
// of a Q4_K_M file.
//
// Q4_K is the 4-bit type (docs/engine.md, "Smaller head", has the
// numbers): of the 4.5-bit types it has the fastest one-token AVX2 kernel
// (6.5 ns per 256 weights from cache against 10.4 for Q4_0 and 10.7 for
// IQ4_NL), its logits are as close to the float head's as IQ4_NL's and
// closer than Q4_0's (TestHead4TypeChoice), and its activations are Q8_K
// blocks — a scale per 256 inputs, finer than the int8 head's one per
// row. A 4.0-bit format with one scale per row would read 11% less of the
// head (3% of a BitNet-2B token), but its logits are twice as far from
// the float head's and it would need kernels of its own. Q3_K (3.44 bits)
// and Q2_K (2.63 bits) read 0.76× and 0.58× of Q4_K's bytes; their logits
// are further off, so they come only with exact candidates (q3x, q2x,
// head4x.go), more of them than q4x's. A head whose rows do not fill
// the K-quants' super-blocks of 256 takes Q4_0 (blocks of 32); narrower
// ones keep the int8 head. K-quant rows are written by quantRowQ4K,
// quantRowQ3K and quantRowQ2K (head4_quant.go), Q4_0 rows by
// gguf.Quantize.

// blockHead is a block-quantized head form: the types it tries in order
// (the first whose block size divides the rows), and K, how many of its
// top logits are re-scored from the float rows (0: none; head4x.go).
type blockHead struct {
	types []gguf.Type
	k     int
}

var (
	q4Types = []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ4_0}
	// blockHeads are the block-quantized head forms; "q8" (int8 per
	// row) and "float" (as stored) are the others.
	blockHeads = map[string]blockHead{
		"q4":  {q4Types, 0},
		"q4x": {q4Types, head4xCandidates},
		"q3x": {[]gguf.Type{gguf.TypeQ3_K, gguf.TypeQ4_0}, head3xCandidates},
		"q2x": {[]gguf.Type{gguf.TypeQ2_K, gguf.TypeQ4_0}, head2xCandidates},
	}
)

// headForms lists the head forms LoadOptions.Head and EDGECTL_HEAD take,
// for errors and help.
const headForms = "q4x, q3x, q2x, q4, q8 or float"

// isHeadForm says whether form is one of headForms.
func isHeadForm(form string) bool {
	_, ok := blockHeads[form]
	return ok || form == "q8" || form == "float"
}

// headType is the block type of a head of form at c columns.
func headType(form string, c int) (gguf.Type, bool) {
	for _, t := range blockHeads[form].types {
		if c > 0 && int64(c)%t.BlockSize() == 0 {
			return t, true
		}
	}
	return 0, false
}

// quantizeBlockHead builds the copy of a float head in block type t, on
// all cores, straight into anonymous memory (one row of floats per worker,
// never a second float copy). As quantizeHead does, it drops each chunk's
// mapped pages of f after reading them.
func quantizeBlockHead(f *floatRows, t gguf.Type, mem *arena) (*quantLinear, error) {
	if int64(f.c)%t.BlockSize() != 0 {
		return nil, fmt.Errorf("%s LM head: its %d columns are not a multiple of the block size %d (EDGECTL_HEAD=q8 keeps an int8 head)", t, f.c, t.BlockSize())
	}
	rb := int(t.RowSize(int64(f.c)))
	raw := mem.alloc(f.r * rb)
	f.eachRowOnce(func(r int, row []float32) {
		quantizeHeadRow(t, row, raw[r*rb:(r+1)*rb])
	})
	return newQuantLinear(raw, t, f.r, f.c)
}

// quantizeHeadRow writes row in type t to dst (t.RowSize(len(row)) bytes;
// blockHeads' types only, whose block sizes quantizeBlockHead checked).
func quantizeHeadRow(t gguf.Type, row []float32, dst []byte) {
	switch t {
	case gguf.TypeQ4_K:
		quantRowQ4K(row, dst)
	case gguf.TypeQ3_K:
		quantRowQ3K(row, dst)
	case gguf.TypeQ2_K:
		quantRowQ2K(row, dst)
	default:
		q, _ := gguf.Quantize(t, row)
		copy(dst, q)
	}
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

// compactHead is float head f held in form (a blockHeads form or "q8"),
// or nil for "float" (the file's dtype). A head too narrow for the block
// types gets the int8 one.
func compactHead(f *floatRows, form string, mem *arena) linear {
	if _, ok := blockHeads[form]; ok { // the x forms re-score candidates on top (head4x.go)
		if t, ok := headType(form, f.c); ok {
			if l, err := quantizeBlockHead(f, t, mem); err == nil {
				return l
			}
		}
		return quantizeHead(f, mem)
	}
	if form == "q8" {
		return quantizeHead(f, mem)
	}
	return nil
}
