package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Writer streams a GGUF v3 file. Declare metadata with Set and tensors with
// AddTensor, then call WriteHeader, then Write each tensor's bytes in
// declaration order (in as many pieces as convenient: the writer pads
// between tensors itself), then Finish. Only one tensor's worth of bytes
// ever needs to be in the caller's memory, and not even that.
type Writer struct {
	w         *bufio.Writer
	kvs       []KV
	kvIndex   map[string]int
	tensors   []TensorInfo
	tIndex    map[string]int
	alignment int64

	headerDone bool
	cur        int   // tensor being written
	curDone    int64 // bytes of it written so far
	pos        int64 // bytes written to w
	err        error
}

// NewWriter returns a writer with alignment 32.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<20), kvIndex: map[string]int{}, tIndex: map[string]int{}, alignment: DefaultAlignment}
}

// valueType maps a Go value to its GGUF type. Plain int is rejected because
// llama.cpp checks exact types (u32 for dims, i32 for token types).
func valueType(v any) (t, elem ValueType, err error) {
	switch v.(type) {
	case uint8:
		return ValU8, 0, nil
	case int8:
		return ValI8, 0, nil
	case uint16:
		return ValU16, 0, nil
	case int16:
		return ValI16, 0, nil
	case uint32:
		return ValU32, 0, nil
	case int32:
		return ValI32, 0, nil
	case float32:
		return ValF32, 0, nil
	case bool:
		return ValBool, 0, nil
	case string:
		return ValString, 0, nil
	case uint64:
		return ValU64, 0, nil
	case int64:
		return ValI64, 0, nil
	case float64:
		return ValF64, 0, nil
	case []uint8:
		return ValArray, ValU8, nil
	case []int8:
		return ValArray, ValI8, nil
	case []uint16:
		return ValArray, ValU16, nil
	case []int16:
		return ValArray, ValI16, nil
	case []uint32:
		return ValArray, ValU32, nil
	case []int32:
		return ValArray, ValI32, nil
	case []float32:
		return ValArray, ValF32, nil
	case []bool:
		return ValArray, ValBool, nil
	case []string:
		return ValArray, ValString, nil
	case []uint64:
		return ValArray, ValU64, nil
	case []int64:
		return ValArray, ValI64, nil
	case []float64:
		return ValArray, ValF64, nil
	}
	return 0, 0, fmt.Errorf("gguf: value of Go type %T has no GGUF type (use uint32, int32, float32, string, bool, … or a slice of one)", v)
}

// Set adds or replaces a metadata pair; the Go type of v picks the GGUF
// type. Setting general.alignment (uint32 power of two) changes the
// alignment used for the data section.
func (w *Writer) Set(key string, v any) error {
	if w.headerDone {
		return errors.New("gguf: Set after WriteHeader")
	}
	t, e, err := valueType(v)
	if err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	if key == "general.alignment" {
		a, ok := v.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("gguf: general.alignment must be a uint32 power of two, got %T %v", v, v)
		}
		w.alignment = int64(a)
	}
	kv := KV{Key: key, Type: t, Elem: e, Value: v}
	if i, ok := w.kvIndex[key]; ok {
		w.kvs[i] = kv
		return nil
	}
	w.kvIndex[key] = len(w.kvs)
	w.kvs = append(w.kvs, kv)
	return nil
}

// AddTensor declares the next tensor. ne[0] is the contiguous dimension and
// must be a multiple of typ's block size.
func (w *Writer) AddTensor(name string, typ Type, ne ...int64) error {
	if w.headerDone {
		return errors.New("gguf: AddTensor after WriteHeader")
	}
	if _, dup := w.tIndex[name]; dup {
		return fmt.Errorf("gguf: tensor %q declared twice", name)
	}
	if !typ.Known() {
		return fmt.Errorf("gguf: tensor %q: unknown ggml type %d", name, uint32(typ))
	}
	if len(ne) == 0 || len(ne) > maxDims {
		return fmt.Errorf("gguf: tensor %q: %d dimensions (1 to %d allowed)", name, len(ne), maxDims)
	}
	if bs := typ.BlockSize(); ne[0]%bs != 0 {
		return fmt.Errorf("gguf: tensor %q: ne[0] = %d is not a multiple of the %s block size %d", name, ne[0], typ, bs)
	}
	t := TensorInfo{Name: name, Type: typ, Ne: append([]int64(nil), ne...)}
	t.Size = typ.RowSize(ne[0]) * t.Rows()
	w.tIndex[name] = len(w.tensors)
	w.tensors = append(w.tensors, t)
	return nil
}

// Tensors returns the declared tensors with their data-relative offsets
// (valid after WriteHeader).
func (w *Writer) Tensors() []TensorInfo { return w.tensors }

func (w *Writer) put(b []byte) {
	if w.err != nil {
		return
	}
	var n int
	n, w.err = w.w.Write(b)
	w.pos += int64(n)
}

func (w *Writer) u32(v uint32) { var b [4]byte; binary.LittleEndian.PutUint32(b[:], v); w.put(b[:]) }
func (w *Writer) u64(v uint64) { var b [8]byte; binary.LittleEndian.PutUint64(b[:], v); w.put(b[:]) }
func (w *Writer) str(s string) { w.u64(uint64(len(s))); w.put([]byte(s)) }

func (w *Writer) scalar(v any) {
	switch x := v.(type) {
	case uint8:
		w.put([]byte{x})
	case int8:
		w.put([]byte{byte(x)})
	case bool:
		if x {
			w.put([]byte{1})
		} else {
			w.put([]byte{0})
		}
	case uint16:
		w.put([]byte{byte(x), byte(x >> 8)})
	case int16:
		w.put([]byte{byte(x), byte(uint16(x) >> 8)})
	case uint32:
		w.u32(x)
	case int32:
		w.u32(uint32(x))
	case float32:
		w.u32(math.Float32bits(x))
	case string:
		w.str(x)
	case uint64:
		w.u64(x)
	case int64:
		w.u64(uint64(x))
	case float64:
		w.u64(math.Float64bits(x))
	}
}

func (w *Writer) value(kv KV) {
	if kv.Type != ValArray {
		w.scalar(kv.Value)
		return
	}
	w.u32(uint32(kv.Elem))
	switch a := kv.Value.(type) {
	case []uint8:
		w.u64(uint64(len(a)))
		w.put(a)
	case []string:
		w.u64(uint64(len(a)))
		for _, s := range a {
			w.str(s)
		}
	default:
		each(kv.Value, func(n int) { w.u64(uint64(n)) }, w.scalar)
	}
}

// each calls n(len) then f for every element of a typed numeric slice.
func each(s any, n func(int), f func(any)) {
	switch a := s.(type) {
	case []int8:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	case []uint16:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	case []int16:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	case []uint32:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	case []int32:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	case []float32:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	case []bool:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	case []uint64:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	case []int64:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	case []float64:
		n(len(a))
		for _, v := range a {
			f(v)
		}
	}
}

func (w *Writer) pad() {
	if r := w.pos % w.alignment; r != 0 {
		w.put(make([]byte, w.alignment-r))
	}
}

// WriteHeader writes the header, metadata, tensor table and the padding
// before the data section. Tensor offsets are assigned here.
func (w *Writer) WriteHeader() error {
	if w.headerDone {
		return errors.New("gguf: WriteHeader called twice")
	}
	w.headerDone = true
	var off int64
	for i := range w.tensors {
		w.tensors[i].RelOffset = off
		off += (w.tensors[i].Size + w.alignment - 1) / w.alignment * w.alignment
	}
	w.put([]byte(Magic))
	w.u32(Version)
	w.u64(uint64(len(w.tensors)))
	w.u64(uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		w.str(kv.Key)
		w.u32(uint32(kv.Type))
		w.value(kv)
	}
	for _, t := range w.tensors {
		w.str(t.Name)
		w.u32(uint32(len(t.Ne)))
		for _, n := range t.Ne {
			w.u64(uint64(n))
		}
		w.u32(uint32(t.Type))
		w.u64(uint64(t.RelOffset))
	}
	w.pad()
	dataStart := w.pos
	for i := range w.tensors {
		w.tensors[i].Offset = dataStart + w.tensors[i].RelOffset
	}
	w.skipEmpty()
	return w.err
}

// skipEmpty advances past zero-byte tensors.
func (w *Writer) skipEmpty() {
	for w.cur < len(w.tensors) && w.tensors[w.cur].Size == 0 {
		w.cur++
	}
}

// Write appends tensor data. Bytes fill the current tensor; when it is
// complete the writer pads and moves to the next one. Writing more bytes
// than the declared tensors hold is an error.
func (w *Writer) Write(p []byte) (int, error) {
	if !w.headerDone {
		return 0, errors.New("gguf: Write before WriteHeader")
	}
	written := 0
	for len(p) > 0 && w.err == nil {
		if w.cur >= len(w.tensors) {
			return written, fmt.Errorf("gguf: %d bytes beyond the last declared tensor", len(p))
		}
		t := w.tensors[w.cur]
		n := min(int64(len(p)), t.Size-w.curDone)
		w.put(p[:n])
		p = p[n:]
		written += int(n)
		w.curDone += n
		if w.curDone == t.Size {
			w.pad()
			w.cur++
			w.curDone = 0
			w.skipEmpty()
		}
	}
	return written, w.err
}

// Current is the name of the tensor the next Write goes to ("" when all
// are complete).
func (w *Writer) Current() string {
	if w.cur < len(w.tensors) {
		return w.tensors[w.cur].Name
	}
	return ""
}

// Finish checks that every tensor was written in full and flushes.
func (w *Writer) Finish() error {
	if !w.headerDone {
		if err := w.WriteHeader(); err != nil {
			return err
		}
	}
	if w.err != nil {
		return w.err
	}
	if w.cur < len(w.tensors) {
		t := w.tensors[w.cur]
		return fmt.Errorf("gguf: tensor %q: %d of %d bytes written", t.Name, w.curDone, t.Size)
	}
	return w.w.Flush()
}
