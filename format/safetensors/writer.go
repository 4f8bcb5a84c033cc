package safetensors

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Source is a tensor to write: its description and where its bytes come from.
type Source struct {
	Name  string
	DType DType
	Shape []int64
	// WriteTo writes exactly the tensor's ByteSize bytes to w.
	WriteTo func(w io.Writer) error
}

// Size is the byte size the shape and dtype imply.
func (s Source) Size() int64 {
	n := int64(1)
	for _, d := range s.Shape {
		n *= d
	}
	return s.DType.ByteSize(n)
}

// FromReader is a WriteTo that copies n bytes from r (copy_file_range when r
// is a file section and w a file).
func FromReader(r io.Reader, n int64) func(io.Writer) error {
	return func(w io.Writer) error {
		got, err := io.CopyN(w, r, n)
		if err != nil {
			return fmt.Errorf("copied %d of %d bytes: %w", got, n, err)
		}
		return nil
	}
}

// FromBytes is a WriteTo for data already in memory.
func FromBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}

// EncodeHeader returns the 8-byte length prefix and JSON header for tensors
// laid out in the given order. The JSON is padded with spaces so the data
// section starts 8-aligned, as the reference writer does. Keys are written
// in sorted order so output is reproducible.
func EncodeHeader(meta map[string]string, tensors []Source) ([]byte, error) {
	type entry struct {
		DType       DType    `json:"dtype"`
		Shape       []int64  `json:"shape"`
		DataOffsets [2]int64 `json:"data_offsets"`
	}
	m := make(map[string]any, len(tensors)+1)
	if len(meta) > 0 {
		m["__metadata__"] = meta
	}
	var off int64
	for _, t := range tensors {
		if !t.DType.Known() {
			return nil, fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		if _, dup := m[t.Name]; dup {
			return nil, fmt.Errorf("tensor %q: duplicate name", t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		size := t.Size()
		m[t.Name] = entry{DType: t.DType, Shape: shape, DataOffsets: [2]int64{off, off + size}}
		off += size
	}
	js, err := json.Marshal(m) // map keys are sorted by encoding/json
	if err != nil {
		return nil, err
	}
	pad := (8 - len(js)%8) % 8
	out := make([]byte, 8, 8+len(js)+pad)
	putU64(out, uint64(len(js)+pad))
	out = append(out, js...)
	for range pad {
		out = append(out, ' ')
	}
	return out, nil
}

// Write streams a safetensors file to w: the header, then each tensor's bytes
// in the given order. It checks every tensor writes exactly its size.
func Write(w io.Writer, meta map[string]string, tensors []Source) error {
	hdr, err := EncodeHeader(meta, tensors)
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, t := range tensors {
		cw := &countWriter{w: w}
		if err := t.WriteTo(cw); err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if cw.n != t.Size() {
			return fmt.Errorf("tensor %q: wrote %d bytes, its %s %v shape needs %d", t.Name, cw.n, t.DType, t.Shape, t.Size())
		}
	}
	return nil
}

// SortCanonical orders sources as the reference writer does: by descending
// element size, then by name. Useful for deterministic new files.
func SortCanonical(ts []Source) {
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].DType.Bits() != ts[j].DType.Bits() {
			return ts[i].DType.Bits() > ts[j].DType.Bits()
		}
		return ts[i].Name < ts[j].Name
	})
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadFrom keeps io.Copy's fast paths (copy_file_range/sendfile) available
// when the underlying writer is a file.
func (c *countWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(c.w, r)
	c.n += n
	return n, err
}

func putU64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}
