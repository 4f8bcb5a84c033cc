package pulsar2

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/atomicfile"
)

// FindEmbedding returns the checkpoint's token embedding as hflayout
// resolves it (any known prefix; with tied set, the LM head stands in when
// a checkpoint stores the shared matrix only under that name): its file and
// header entry, checked to be a 2-D float matrix.
func FindEmbedding(ck *safetensors.Checkpoint, tied bool) (*safetensors.File, safetensors.Tensor, error) {
	lay, err := hflayout.DetectCheckpoint(ck)
	if err != nil {
		return nil, safetensors.Tensor{}, fmt.Errorf("%s: no token embedding: %w", ck.Dir, err)
	}
	name, err := lay.StoredEmbedding(tied)
	if err != nil {
		return nil, safetensors.Tensor{}, fmt.Errorf("%s: no token embedding: %w", ck.Dir, err)
	}
	f, t, _ := ck.Lookup(name)
	if len(t.Shape) != 2 {
		return nil, t, fmt.Errorf("%s: tensor %q has shape %v, want [vocab, hidden]", f.Path, name, t.Shape)
	}
	switch t.DType {
	case safetensors.BF16, safetensors.F16, safetensors.F32:
	default:
		return nil, t, fmt.Errorf("%s: tensor %q is %s; the embedding must be BF16, F16 or F32 (dequantize it first)", f.Path, name, t.DType)
	}
	return f, t, nil
}

// embedChunkRows bounds the rows converted per step: memory stays at one
// chunk whatever the vocabulary.
const embedChunkBytes = 4 << 20

// WriteEmbedding writes tensor t of f as raw little-endian bf16 to path
// (atomically). BF16 data is copied as stored (copy_file_range where the
// kernel can); F16 and F32 are converted row chunk by row chunk with
// round-to-nearest-even. progress, if not nil, receives the bytes written.
func WriteEmbedding(f *safetensors.File, t safetensors.Tensor, path string, progress io.Writer) error {
	out, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	var w io.Writer = out.File
	if progress != nil {
		w = io.MultiWriter(out.File, progress)
	}
	if t.DType == safetensors.BF16 {
		if progress == nil {
			err = f.CopyTensor(t)(out.File) // *os.File to *os.File: copy_file_range
		} else {
			_, err = io.Copy(w, f.Reader(t))
		}
		if err != nil {
			return fmt.Errorf("%s: copy tensor %q: %w", f.Path, t.Name, err)
		}
		return out.Commit()
	}
	if err := convertToBF16(w, f, t); err != nil {
		return err
	}
	return out.Commit()
}

func convertToBF16(w io.Writer, f *safetensors.File, t safetensors.Tensor) error {
	cols := t.Shape[1]
	rowBytes := t.DType.ByteSize(cols)
	rows := t.Shape[0]
	chunkRows := max(int64(1), embedChunkBytes/max(rowBytes, 1))
	src := make([]byte, chunkRows*rowBytes)
	dst := make([]byte, chunkRows*cols*2)
	r := f.Reader(t)
	for row := int64(0); row < rows; row += chunkRows {
		n := min(chunkRows, rows-row)
		s := src[:n*rowBytes]
		if _, err := r.ReadAt(s, row*rowBytes); err != nil && err != io.EOF {
			return fmt.Errorf("%s: tensor %q: read at byte %d: %w", f.Path, t.Name, f.DataStart()+t.Begin+row*rowBytes, err)
		}
		d := dst[:n*cols*2]
		if t.DType == safetensors.F32 {
			// One pass, no float32 staging: F32 bits straight to BF16.
			for i := range n * cols {
				f := math.Float32frombits(binary.LittleEndian.Uint32(s[4*i:]))
				binary.LittleEndian.PutUint16(d[2*i:], half.F32ToBF16(f))
			}
		} else {
			// F16: every one of the 65536 values has one BF16 image; look it up.
			tab := f16ToBF16Table()
			for i := range n * cols {
				binary.LittleEndian.PutUint16(d[2*i:], tab[binary.LittleEndian.Uint16(s[2*i:])])
			}
		}
		if _, err := w.Write(d); err != nil {
			return err
		}
	}
	return nil
}

// f16ToBF16Table maps each F16 bit pattern to the BF16 that
// format/half gives for its (exact) float32 value, rounding to nearest even.
var f16ToBF16Table = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for h := range t {
		t[h] = half.F32ToBF16(half.F16ToF32(uint16(h)))
	}
	return &t
})
