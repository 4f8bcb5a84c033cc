package h1b

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
)

// Writer streams an .h1b body in its fixed order. Callers give the named
// tensors (not the Skipped copies, which the writer derives from
// attn_sub_norm and ffn_sub_norm) in file order:
//
//	embedding, final_norm, then per layer input_norm, post_attn_norm,
//	attn_sub_norm, ffn_sub_norm, q, k, v, o, gate, up, down
//
// F32 tensors go through WriteF32 and packed matrices through WritePacked
// followed by WriteScales; each call may carry any part of the tensor, so
// nothing larger than a chunk needs to be in memory.
type Writer struct {
	w      *bufio.Writer
	h      Header
	ts     []Tensor
	cur    int   // index into ts
	done   int64 // bytes of ts[cur] written (codes for Packed)
	scales int   // scales written of ts[cur] (Packed)
	// attnSub keeps attn_sub_norm for its three copies; ffnSub collects
	// the first hidden_size floats of ffn_sub_norm for the truncated ones.
	attnSub []float32
	err     error
}

// NewWriter validates h and writes the header.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	ts, _, err := Layout(h)
	if err != nil {
		return nil, err
	}
	wr := &Writer{w: bufio.NewWriterSize(w, 1<<20), h: h, ts: ts}
	wr.put(h.Encode())
	return wr, wr.err
}

// Next is the name of the tensor the writer expects next ("" when done).
func (w *Writer) Next() string {
	for i := w.cur; i < len(w.ts); i++ {
		if w.ts[i].Kind != Skipped {
			return w.ts[i].Name
		}
	}
	return ""
}

// Tensors is the layout being written.
func (w *Writer) Tensors() []Tensor { return w.ts }

func (w *Writer) put(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *Writer) expect(name string, kind Kind) (*Tensor, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.cur >= len(w.ts) {
		return nil, fmt.Errorf("h1b: %q written after the last tensor", name)
	}
	t := &w.ts[w.cur]
	if t.Name != name {
		return nil, fmt.Errorf("h1b: got tensor %q, but the fixed .h1b order needs %q next", name, t.Name)
	}
	if t.Kind != kind {
		return nil, fmt.Errorf("h1b: tensor %q is %s, not %s", name, t.Kind, kind)
	}
	return t, nil
}

// WriteF32 appends values to the F32 tensor name.
func (w *Writer) WriteF32(name string, v []float32) error {
	t, err := w.expect(name, F32)
	if err != nil {
		return err
	}
	if w.done+4*int64(len(v)) > t.Size {
		return fmt.Errorf("h1b: tensor %q: %d values written, %d expected", name, (w.done+4*int64(len(v)))/4, t.Size/4)
	}
	if strings.HasSuffix(name, ".attn_sub_norm") {
		w.attnSub = append(w.attnSub, v...)
	}
	if strings.HasSuffix(name, ".ffn_sub_norm") && w.done == 0 {
		// The two truncated copies precede ffn_sub_norm and hold its first
		// hidden_size values, so this tensor must come in one piece.
		if int64(len(v))*4 != t.Size {
			return fmt.Errorf("h1b: tensor %q must be written in one call", name)
		}
		hs := int(w.h.HiddenSize)
		for c := 0; c < 2; c++ {
			w.putF32(v[:min(hs, len(v))])
			for i := len(v); i < hs; i++ { // intermediate < hidden: pad (never seen in practice)
				w.putF32([]float32{0})
			}
		}
	}
	w.putF32(v)
	w.done += 4 * int64(len(v))
	if w.done == t.Size {
		w.advance()
	}
	return w.err
}

// WriteF32Bytes appends little-endian f32 bytes to the F32 tensor name
// (for large tensors such as embedding that arrive already encoded).
func (w *Writer) WriteF32Bytes(name string, b []byte) error {
	if len(b)%4 != 0 {
		return fmt.Errorf("h1b: tensor %q: %d bytes is not whole f32 values", name, len(b))
	}
	if strings.HasSuffix(name, "_sub_norm") {
		return w.WriteF32(name, decodeF32(b))
	}
	t, err := w.expect(name, F32)
	if err != nil {
		return err
	}
	if w.done+int64(len(b)) > t.Size {
		return fmt.Errorf("h1b: tensor %q: %d values written, %d expected", name, (w.done+int64(len(b)))/4, t.Size/4)
	}
	w.put(b)
	w.done += int64(len(b))
	if w.done == t.Size {
		w.advance()
	}
	return w.err
}

// WriteTrailer appends bytes after the last layer (an untied LM head as
// f32 [vocab][hidden]); legacy readers ignore them. Call after all
// tensors and before Finish.
func (w *Writer) WriteTrailer(b []byte) error {
	if n := w.Next(); n != "" {
		return fmt.Errorf("h1b: trailer written before tensor %q", n)
	}
	w.put(b)
	return w.err
}

func (w *Writer) putF32(v []float32) {
	var buf [4096]byte
	for len(v) > 0 {
		n := min(len(v), len(buf)/4)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v[i]))
		}
		w.put(buf[:4*n])
		v = v[n:]
	}
}

// advance moves past a completed tensor, emitting the copies that follow
// attn_sub_norm and skipping over the truncated copies (already written
// with ffn_sub_norm).
func (w *Writer) advance() {
	name := w.ts[w.cur].Name
	w.cur++
	w.done, w.scales = 0, 0
	if strings.HasSuffix(name, ".attn_sub_norm") {
		for c := 0; c < 3; c++ {
			w.putF32(w.attnSub)
			w.cur++
		}
		w.attnSub = w.attnSub[:0]
		w.cur += 2 // the truncated ffn_sub copies
	}
}

// WritePacked appends packed codes (whole rows or any part) of name.
func (w *Writer) WritePacked(name string, b []byte) error {
	t, err := w.expect(name, Packed)
	if err != nil {
		return err
	}
	if w.done+int64(len(b)) > t.Size {
		return fmt.Errorf("h1b: tensor %q: %d packed bytes written, %d expected (%d rows × %d)", name, w.done+int64(len(b)), t.Size, t.Rows, t.Size/int64(t.Rows))
	}
	w.put(b)
	w.done += int64(len(b))
	return w.err
}

// WriteScales appends per-row scales of name, after all its codes.
func (w *Writer) WriteScales(name string, s []float32) error {
	t, err := w.expect(name, Packed)
	if err != nil {
		return err
	}
	if w.done != t.Size {
		return fmt.Errorf("h1b: tensor %q: scales written after %d of %d packed bytes", name, w.done, t.Size)
	}
	if w.scales+len(s) > t.Rows {
		return fmt.Errorf("h1b: tensor %q: %d scales for %d rows", name, w.scales+len(s), t.Rows)
	}
	w.putF32(s)
	w.scales += len(s)
	if w.scales == t.Rows {
		w.advance()
	}
	return w.err
}

// Finish checks that every tensor was written and flushes.
func (w *Writer) Finish() error {
	if w.err != nil {
		return w.err
	}
	if n := w.Next(); n != "" {
		return fmt.Errorf("h1b: tensor %q (and any after it) not written", n)
	}
	return w.w.Flush()
}
