// Package safetensors reads, validates and streams Hugging Face safetensors
// files and sharded checkpoints. It is edgectl's only safetensors parser:
// inspect, doctor, patch, quant, pulsar2 and engine all read through it.
//
// Files are validated as strictly as the reference Rust reader (contiguous,
// non-overlapping offsets, sizes matching shapes, data ending at EOF), and
// every fault is reported with the file, byte offset and tensor involved.
// Tensor data is never loaded as a whole: callers get io.SectionReaders or
// mmapped views, so memory stays flat whatever the file size.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"unicode/utf8"
)

// MaxHeaderSize is the reference reader's limit on the JSON header.
const MaxHeaderSize = 100_000_000

// Tensor describes one tensor of a file.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	// Begin and End are byte offsets relative to the start of the data
	// section (End exclusive), as in the header.
	Begin, End int64
}

// Elements is the product of the shape (1 for a scalar).
func (t Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Size is the tensor's storage size in bytes.
func (t Tensor) Size() int64 { return t.End - t.Begin }

// Header is a parsed and validated safetensors header.
type Header struct {
	Metadata map[string]string // the optional __metadata__ map
	Tensors  []Tensor          // in data order (ascending Begin)
	// Size is N, the JSON header's length; data starts at 8+N.
	Size  int64
	index map[string]int
}

// DataStart is the absolute file offset of the data section.
func (h *Header) DataStart() int64 { return 8 + h.Size }

// DataSize is the length of the data section.
func (h *Header) DataSize() int64 {
	if len(h.Tensors) == 0 {
		return 0
	}
	return h.Tensors[len(h.Tensors)-1].End
}

// Tensor looks a tensor up by name.
func (h *Header) Tensor(name string) (Tensor, bool) {
	i, ok := h.index[name]
	if !ok {
		return Tensor{}, false
	}
	return h.Tensors[i], true
}

// Names lists tensor names in data order.
func (h *Header) Names() []string {
	out := make([]string, len(h.Tensors))
	for i, t := range h.Tensors {
		out[i] = t.Name
	}
	return out
}

// FormatError is a fault in a safetensors file: what is wrong, where, and
// what to do about it.
type FormatError struct {
	File   string // path, or "" when reading an anonymous stream
	Offset int64  // absolute byte offset the fault concerns, -1 if none
	Tensor string // tensor involved, if any
	Msg    string
	Fix    string
}

func (e *FormatError) Error() string {
	var b bytes.Buffer
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "byte %d: ", e.Offset)
	}
	if e.Tensor != "" {
		fmt.Fprintf(&b, "tensor %q: ", e.Tensor)
	}
	b.WriteString(e.Msg)
	if e.Fix != "" {
		b.WriteString(" (")
		b.WriteString(e.Fix)
		b.WriteString(")")
	}
	return b.String()
}

const fixRedownload = "the file is truncated or corrupt: download it again, e.g. `edgectl pull`"

// ReadHeader reads and validates the header of a safetensors stream of the
// given total size. name is used in errors.
func ReadHeader(r io.ReaderAt, size int64, name string) (*Header, error) {
	fail := func(off int64, tensor, fix, format string, args ...any) error {
		return &FormatError{File: name, Offset: off, Tensor: tensor, Msg: fmt.Sprintf(format, args...), Fix: fix}
	}
	if size < 8 {
		return nil, fail(0, "", fixRedownload, "file is %d bytes, shorter than the 8-byte header length", size)
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fail(0, "", "", "read header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, fail(0, "", "this is not a safetensors file, or its first 8 bytes are damaged",
			"header length %d exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	if int64(n) > size-8 {
		return nil, fail(0, "", fixRedownload, "header length %d runs past the end of the file (%d bytes)", n, size)
	}
	raw := make([]byte, n)
	if _, err := r.ReadAt(raw, 8); err != nil {
		return nil, fail(8, "", "", "read header: %v", err)
	}
	if !utf8.Valid(raw) {
		bad := firstInvalidUTF8(raw)
		return nil, fail(8+int64(bad), "", "the header must be UTF-8 JSON; the file is corrupt or not safetensors", "header is not valid UTF-8")
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.TrimLeft(raw, " \t\r\n")[0] != '{' {
		return nil, fail(8, "", fixRedownload, "header is not a JSON object")
	}
	h := &Header{Size: int64(n), index: map[string]int{}}
	if err := parseHeaderJSON(raw, h, func(off int64, tensor, format string, args ...any) error {
		return fail(8+off, tensor, "", format, args...)
	}); err != nil {
		return nil, err
	}
	sort.SliceStable(h.Tensors, func(i, j int) bool {
		a, b := h.Tensors[i], h.Tensors[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.End < b.End
	})
	dataStart := 8 + int64(n)
	var prevEnd int64
	for i, t := range h.Tensors {
		h.index[t.Name] = i
		if t.Begin != prevEnd {
			what := "leaves a gap"
			if t.Begin < prevEnd {
				what = "overlaps the previous tensor"
			}
			return nil, fail(dataStart+t.Begin, t.Name, "the header's data_offsets must tile the data section; the file was written by a broken tool",
				"data_offsets [%d, %d] %s (previous tensor ends at %d)", t.Begin, t.End, what, prevEnd)
		}
		if t.End < t.Begin {
			return nil, fail(dataStart+t.Begin, t.Name, "", "data_offsets [%d, %d] end before they begin", t.Begin, t.End)
		}
		want, ok := byteSize(t)
		if !ok {
			return nil, fail(dataStart+t.Begin, t.Name, "the header is corrupt: re-download or re-convert the file", "shape %v is too large to address (its element count overflows 64 bits)", t.Shape)
		}
		if t.End-t.Begin != want {
			return nil, fail(dataStart+t.Begin, t.Name, "", "%s shape %v needs %d bytes but data_offsets [%d, %d] hold %d",
				t.DType, t.Shape, want, t.Begin, t.End, t.End-t.Begin)
		}
		prevEnd = t.End
	}
	// Compared as prevEnd vs size-dataStart: dataStart+prevEnd can overflow.
	if prevEnd != size-dataStart {
		if prevEnd > size-dataStart {
			return nil, fail(size, "", fixRedownload, "file ends at byte %d but its tensors need %d bytes of data after the %d-byte header", size, prevEnd, dataStart)
		}
		return nil, fail(dataStart+prevEnd, "", "", "%d bytes after the last tensor", size-dataStart-prevEnd)
	}
	return h, nil
}

// byteSize is the storage size shape and dtype imply. The product of the
// non-zero dimensions must fit too: a zero-element tensor of shape
// [0, 2^62, 2^62] is harmless here but not to a caller that sizes a
// buffer from one dimension or multiplies two of them.
func byteSize(t Tensor) (int64, bool) {
	n, nonZero := uint64(1), uint64(1)
	for _, d := range t.Shape {
		if d > 0 {
			hi, lo := bits.Mul64(nonZero, uint64(d))
			if hi != 0 || lo > math.MaxInt64/64 {
				return 0, false
			}
			nonZero = lo
		}
		n *= uint64(d) // ≤ nonZero, or 0
	}
	return t.DType.ByteSize(int64(n)), true
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return 0
}

type rawTensor struct {
	DType       *DType   `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// parseHeaderJSON walks the top-level object token by token so duplicate
// names are caught (encoding/json would keep the last silently).
func parseHeaderJSON(raw []byte, h *Header, fail func(off int64, tensor, format string, args ...any) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return fail(0, "", "header is not valid JSON: %v", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return fail(off, "", "header is not valid JSON: %v", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return fail(off, key, "appears twice in the header")
		}
		seen[key] = true
		valOff := dec.InputOffset()
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return fail(valOff, key, "header is not valid JSON: %v", err)
		}
		if key == "__metadata__" {
			var m map[string]any
			if err := json.Unmarshal(val, &m); err != nil {
				return fail(valOff, "", "__metadata__ is not an object")
			}
			h.Metadata = make(map[string]string, len(m))
			for k, v := range m {
				s, ok := v.(string)
				if !ok {
					return fail(valOff, "", "__metadata__[%q] is %T; values must be strings", k, v)
				}
				h.Metadata[k] = s
			}
			continue
		}
		var rt rawTensor
		if err := json.Unmarshal(val, &rt); err != nil {
			return fail(valOff, key, "entry is not {dtype, shape, data_offsets}: %v", err)
		}
		if rt.DType == nil || rt.Shape == nil || rt.DataOffsets == nil {
			return fail(valOff, key, "entry lacks dtype, shape or data_offsets")
		}
		if !rt.DType.Known() {
			return fail(valOff, key, "unknown dtype %q", *rt.DType)
		}
		if len(*rt.DataOffsets) != 2 {
			return fail(valOff, key, "data_offsets must have 2 entries, has %d", len(*rt.DataOffsets))
		}
		for _, d := range *rt.Shape {
			if d < 0 {
				return fail(valOff, key, "negative dimension in shape %v", *rt.Shape)
			}
		}
		do := *rt.DataOffsets
		if do[0] < 0 || do[1] < 0 {
			return fail(valOff, key, "negative data_offsets %v", do)
		}
		h.Tensors = append(h.Tensors, Tensor{Name: key, DType: *rt.DType, Shape: *rt.Shape, Begin: do[0], End: do[1]})
	}
	if _, err := dec.Token(); err != nil {
		return fail(dec.InputOffset(), "", "header is not valid JSON: %v", err)
	}
	return nil
}
