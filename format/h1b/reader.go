package h1b

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/edgectl/edgectl/internal/mmapfile"
)

// File is an open .h1b. Tensor bytes come from an mmapped view.
type File struct {
	Path string
	Header
	// Tensors lists every region in file order, Skipped copies included.
	Tensors []Tensor
	// End is the offset just past the last layer; bytes after it (an
	// untied LM head some writers append) are ignored by the legacy
	// loaders. When TieEmbeddings is 0 and exactly vocab×hidden f32 follow,
	// Tensors ends with an F32 "lm_head" over them.
	End int64

	f     *mmapfile.File
	size  int64
	index map[string]int
}

// Open opens and validates an .h1b file.
func Open(path string) (*File, error) {
	f, err := mmapfile.Open(path, "an .h1b file")
	if err != nil {
		return nil, err
	}
	g, err := parse(f, f.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	g.f = f
	return g, nil
}

// parse validates the header of an .h1b of the given size read through r
// and lays out its regions, all of which must lie inside the file.
func parse(r io.ReaderAt, size int64, path string) (*File, error) {
	hb := make([]byte, 52)
	n, _ := r.ReadAt(hb, 0)
	h, err := DecodeHeader(hb[:n])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ts, end, err := layout(h, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if end > size {
		// Name the first region that does not fit (layout stopped soon
		// after it).
		for _, t := range ts {
			stop := t.Offset + t.Size
			if t.Kind == Packed {
				stop = t.ScalesOffset + 4*int64(t.Rows)
			}
			if stop > size {
				return nil, fmt.Errorf("%s: byte %d: tensor %q [%d×%d] ends at byte %d, past the end of the %d-byte file (truncated, or the header dims are wrong: %d layers, hidden %d, intermediate %d, vocab %d)",
					path, t.Offset, t.Name, t.Rows, t.K, stop, size, h.NumLayers, h.HiddenSize, h.IntermediateSize, h.VocabSize)
			}
		}
	}
	// An untied model's LM head, when a writer appended it as f32
	// [vocab][hidden] right after the last layer (edgectl does), is exposed
	// as "lm_head"; other trailing bytes stay anonymous.
	if head := 4 * int64(h.VocabSize) * int64(h.HiddenSize); h.TieEmbeddings == 0 && size-end == head {
		ts = append(ts, Tensor{Name: "lm_head", Kind: F32, Rows: int(h.VocabSize), K: int(h.HiddenSize), Offset: end, Size: head})
	}
	g := &File{Path: path, Header: h, Tensors: ts, End: end, size: size, index: make(map[string]int, len(ts))}
	for i, t := range ts {
		g.index[t.Name] = i
	}
	return g, nil
}

// Size is the file length.
func (g *File) Size() int64 { return g.size }

// Close releases the file and mapping.
func (g *File) Close() error { return g.f.Close() }

// Tensor looks a region up by name.
func (g *File) Tensor(name string) (Tensor, bool) {
	i, ok := g.index[name]
	if !ok {
		return Tensor{}, false
	}
	return g.Tensors[i], true
}

func (g *File) view(off, n int64) ([]byte, error) { return g.f.Slice(off, n) }

// Bytes returns the stored values (F32, Skipped) or packed codes (Packed)
// as a read-only view, valid until Close.
func (g *File) Bytes(t Tensor) ([]byte, error) { return g.view(t.Offset, t.Size) }

// ReleaseRange drops the mapped pages of bytes [off, off+n) of t's data
// from the resident set; touching them again reads them back from the file.
func (g *File) ReleaseRange(t Tensor, off, n int64) { g.f.Release(t.Offset+off, n) }

// ScaleBytes returns the raw f32 scales of a Packed tensor.
func (g *File) ScaleBytes(t Tensor) ([]byte, error) {
	if t.Kind != Packed {
		return nil, fmt.Errorf("%s: tensor %q has no scales", g.Path, t.Name)
	}
	return g.view(t.ScalesOffset, 4*int64(t.Rows))
}

// Scales decodes a Packed tensor's per-row scales.
func (g *File) Scales(t Tensor) ([]float32, error) {
	b, err := g.ScaleBytes(t)
	if err != nil {
		return nil, err
	}
	return decodeF32(b), nil
}

// Float32 decodes an F32 (or Skipped) region.
func (g *File) Float32(t Tensor) ([]float32, error) {
	if t.Kind == Packed {
		return nil, fmt.Errorf("%s: tensor %q is packed; unpack it with the %s codec", g.Path, t.Name, Packing(g.Version))
	}
	b, err := g.Bytes(t)
	if err != nil {
		return nil, err
	}
	return decodeF32(b), nil
}

// RowBytes is the packed row stride of t in this file.
func (g *File) RowBytes(t Tensor) int {
	n, _ := RowBytes(g.Version, t.K)
	return n
}

func decodeF32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
