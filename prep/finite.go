package prep

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/format/safetensors"
)

// checkFinite reads every float tensor once and names the first NaN or
// infinity: a checkpoint that holds one produces garbage (or NaN logits)
// on every target, so prep refuses it before building anything. The scan
// works on the stored bits through the mmapped view, releasing each
// tensor's pages after, so memory stays flat on large checkpoints.
func checkFinite(ck *safetensors.Checkpoint) error {
	for _, f := range ck.Files {
		for _, t := range f.Tensors {
			width := 0
			switch t.DType {
			case safetensors.F16, safetensors.BF16:
				width = 2
			case safetensors.F32:
				width = 4
			case safetensors.F64:
				width = 8
			default:
				continue // integer and 8-bit float types have no NaN worth scanning for
			}
			b, err := f.Bytes(t)
			if err != nil {
				return fmt.Errorf("%s: tensor %q: %w", f.Path, t.Name, err)
			}
			i := firstNonFinite(b, t.DType, width)
			f.Release(t)
			if i >= 0 {
				return fmt.Errorf("%s: tensor %q %v: element %d is %s (byte %d of the file): the checkpoint is corrupt, download it again or fix the training run that wrote it",
					f.Path, t.Name, t.Shape, i, valueAt(b, t.DType, i), f.DataStart()+t.Begin+int64(i*width))
			}
		}
	}
	return nil
}

// firstNonFinite returns the index of the first element whose exponent
// bits are all ones (NaN or ±Inf), or -1.
func firstNonFinite(b []byte, dt safetensors.DType, width int) int {
	n := len(b) / width
	switch dt {
	case safetensors.F16:
		for i := range n {
			if binary.LittleEndian.Uint16(b[2*i:])&0x7c00 == 0x7c00 {
				return i
			}
		}
	case safetensors.BF16:
		for i := range n {
			if binary.LittleEndian.Uint16(b[2*i:])&0x7f80 == 0x7f80 {
				return i
			}
		}
	case safetensors.F32:
		for i := range n {
			if binary.LittleEndian.Uint32(b[4*i:])&0x7f800000 == 0x7f800000 {
				return i
			}
		}
	case safetensors.F64:
		for i := range n {
			if binary.LittleEndian.Uint64(b[8*i:])&0x7ff0000000000000 == 0x7ff0000000000000 {
				return i
			}
		}
	}
	return -1
}

// valueAt spells element i for a message: NaN, +Inf or -Inf.
func valueAt(b []byte, dt safetensors.DType, i int) string {
	var v float64
	switch dt {
	case safetensors.F16, safetensors.BF16:
		out := make([]float32, 1)
		if dt == safetensors.F16 {
			half.DecodeF16(out, b[2*i:2*i+2])
		} else {
			half.DecodeBF16(out, b[2*i:2*i+2])
		}
		v = float64(out[0])
	case safetensors.F32:
		v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	case safetensors.F64:
		v = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return fmt.Sprint(v)
}
