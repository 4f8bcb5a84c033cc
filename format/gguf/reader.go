package gguf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/edgectl/edgectl/internal/mmapfile"
)

// KV is one metadata pair. Value holds a Go value of the matching type:
// uint8, int8, uint16, int16, uint32, int32, float32, bool, string, uint64,
// int64, float64, or for arrays a typed slice ([]uint32, []string, …; []any
// of such slices for nested arrays).
type KV struct {
	Key   string
	Type  ValueType
	Elem  ValueType // element type when Type == ValArray
	Value any
}

// TensorInfo is one entry of the tensor table.
type TensorInfo struct {
	Name string
	Type Type
	// Ne holds the dimensions, ne[0] first (the contiguous one).
	Ne []int64
	// Offset is the absolute file offset of the tensor's first byte;
	// RelOffset is the stored offset relative to the data section.
	Offset, RelOffset int64
	// Size is the stored byte size: ne[0]/block·type_size·ne[1]·….
	Size int64
}

// Elements is the product of the dimensions.
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Ne {
		n *= d
	}
	return n
}

// Rows is the number of ne[0]-long rows (product of ne[1:]).
func (t TensorInfo) Rows() int64 {
	n := int64(1)
	for _, d := range t.Ne[1:] {
		n *= d
	}
	return n
}

// FormatError is a fault in a GGUF file: what, where, and how to fix it.
type FormatError struct {
	File   string
	Offset int64 // absolute byte offset, -1 if none
	Tensor string
	Key    string
	Msg    string
}

func (e *FormatError) Error() string {
	var b bytes.Buffer
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "byte %d: ", e.Offset)
	}
	if e.Tensor != "" {
		fmt.Fprintf(&b, "tensor %q: ", e.Tensor)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// File is an open, validated GGUF file. Tensor data is not read until asked
// for, and then through an mmapped view.
type File struct {
	Path      string
	Version   uint32
	KVs       []KV // in file order
	Tensors   []TensorInfo
	Alignment int64
	// DataOffset is the absolute offset of the data section.
	DataOffset int64

	f       *mmapfile.File
	size    int64
	kvIndex map[string]int
	tIndex  map[string]int
}

// Limits that keep a corrupt header from allocating unbounded memory.
// Every count is also checked against the bytes left in the file before
// anything is allocated; these caps bound a sparse or huge file as well.
const (
	maxDims      = 4
	maxStringLen = 256 << 20 // chat templates are kilobytes
	maxArrayLen  = 1 << 28   // vocabularies are ~10^5 entries
	maxTensors   = 1 << 20
	maxKVs       = 1 << 20
)

const fixRedo = "the file is corrupt or truncated: download or convert it again"

// Open opens and validates a GGUF file.
func Open(path string) (*File, error) {
	f, err := mmapfile.Open(path, "a .gguf file")
	if err != nil {
		return nil, err
	}
	g := &File{Path: path, f: f, size: f.Size()}
	if err := g.parse(f); err != nil {
		f.Close()
		return nil, err
	}
	return g, nil
}

// Size is the file length.
func (g *File) Size() int64 { return g.size }

// Close releases the file and its mapping.
func (g *File) Close() error { return g.f.Close() }

// decoder reads little-endian values and tracks the absolute offset.
type decoder struct {
	r    *bufio.Reader
	off  int64
	size int64
	file string
	err  error
	buf  [8]byte
}

func (d *decoder) fail(off int64, format string, args ...any) error {
	if d.err == nil {
		d.err = &FormatError{File: d.file, Offset: off, Msg: fmt.Sprintf(format, args...)}
	}
	return d.err
}

func (d *decoder) read(n int) []byte {
	if d.err != nil {
		return d.buf[:n]
	}
	if _, err := io.ReadFull(d.r, d.buf[:n]); err != nil {
		d.fail(d.off, "unexpected end of file reading the header (file is %d bytes; it is truncated: download or convert it again)", d.size)
		return d.buf[:n]
	}
	d.off += int64(n)
	return d.buf[:n]
}

func (d *decoder) u8() uint8   { return d.read(1)[0] }
func (d *decoder) u16() uint16 { return binary.LittleEndian.Uint16(d.read(2)) }
func (d *decoder) u32() uint32 { return binary.LittleEndian.Uint32(d.read(4)) }
func (d *decoder) u64() uint64 { return binary.LittleEndian.Uint64(d.read(8)) }

func (d *decoder) str() string {
	at := d.off
	n := d.u64()
	if d.err != nil {
		return ""
	}
	if n > maxStringLen || int64(n) > d.size-d.off {
		d.fail(at, "string length %d runs past the end of the %d-byte file or the %d-byte limit (%s)", n, d.size, maxStringLen, fixRedo)
		return ""
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.fail(d.off, "unexpected end of file in a string")
		return ""
	}
	d.off += int64(n)
	return string(b)
}

// count reads an array/table length and checks it against limit and
// against n items of at least minSize bytes each fitting in what is left
// of the file, before the caller allocates anything for them.
func (d *decoder) count(what string, minSize, limit int64) int64 {
	at := d.off
	n := int64(d.u64())
	if d.err != nil {
		return 0
	}
	if n < 0 || n > limit || (minSize > 0 && n > (d.size-d.off)/minSize) {
		d.fail(at, "%s count %d is impossible for a %d-byte file (at most %d; %s)", what, uint64(n), d.size, limit, fixRedo)
		return 0
	}
	return n
}

func (d *decoder) scalar(t ValueType) any {
	switch t {
	case ValU8:
		return d.u8()
	case ValI8:
		return int8(d.u8())
	case ValU16:
		return d.u16()
	case ValI16:
		return int16(d.u16())
	case ValU32:
		return d.u32()
	case ValI32:
		return int32(d.u32())
	case ValF32:
		return math.Float32frombits(d.u32())
	case ValBool:
		at := d.off
		b := d.u8()
		if b > 1 {
			d.fail(at, "bool value %d is not 0 or 1", b)
		}
		return b == 1
	case ValString:
		return d.str()
	case ValU64:
		return d.u64()
	case ValI64:
		return int64(d.u64())
	case ValF64:
		return math.Float64frombits(d.u64())
	}
	return nil
}

func (d *decoder) array(depth int) (ValueType, any) {
	at := d.off
	et := ValueType(d.u32())
	if d.err != nil {
		return et, nil
	}
	min := et.fixedSize()
	switch {
	case et == ValString || et == ValArray:
		min = 8
	case min == 0:
		d.fail(at, "array element type %d is not a GGUF value type", uint32(et))
		return et, nil
	}
	n := d.count("array element", min, maxArrayLen)
	if d.err != nil {
		return et, nil
	}
	switch et {
	case ValArray:
		if depth > 3 {
			d.fail(at, "arrays nested more than 3 deep")
			return et, nil
		}
		out := make([]any, n)
		for i := range out {
			_, out[i] = d.array(depth + 1)
		}
		return et, out
	case ValString:
		out := make([]string, n)
		for i := range out {
			out[i] = d.str()
		}
		return et, out
	}
	// Fixed-size elements: read the block at once.
	raw := make([]byte, n*min)
	if _, err := io.ReadFull(d.r, raw); err != nil {
		d.fail(d.off, "unexpected end of file in an array")
		return et, nil
	}
	d.off += int64(len(raw))
	return et, decodeArray(et, raw, int(n))
}

func decodeArray(et ValueType, raw []byte, n int) any {
	le := binary.LittleEndian
	switch et {
	case ValU8:
		return raw
	case ValI8:
		o := make([]int8, n)
		for i := range o {
			o[i] = int8(raw[i])
		}
		return o
	case ValBool:
		o := make([]bool, n)
		for i := range o {
			o[i] = raw[i] != 0
		}
		return o
	case ValU16:
		o := make([]uint16, n)
		for i := range o {
			o[i] = le.Uint16(raw[2*i:])
		}
		return o
	case ValI16:
		o := make([]int16, n)
		for i := range o {
			o[i] = int16(le.Uint16(raw[2*i:]))
		}
		return o
	case ValU32:
		o := make([]uint32, n)
		for i := range o {
			o[i] = le.Uint32(raw[4*i:])
		}
		return o
	case ValI32:
		o := make([]int32, n)
		for i := range o {
			o[i] = int32(le.Uint32(raw[4*i:]))
		}
		return o
	case ValF32:
		o := make([]float32, n)
		for i := range o {
			o[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return o
	case ValU64:
		o := make([]uint64, n)
		for i := range o {
			o[i] = le.Uint64(raw[8*i:])
		}
		return o
	case ValI64:
		o := make([]int64, n)
		for i := range o {
			o[i] = int64(le.Uint64(raw[8*i:]))
		}
		return o
	case ValF64:
		o := make([]float64, n)
		for i := range o {
			o[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return o
	}
	return nil
}

// parse reads and validates the header from r (g.size bytes long).
func (g *File) parse(r io.ReaderAt) error {
	buf := int(min(g.size, 1<<20)) // a small file gets a small buffer
	d := &decoder{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, g.size), buf), size: g.size, file: g.Path}
	if g.size < 24 {
		return &FormatError{File: g.Path, Offset: -1, Msg: fmt.Sprintf("file is %d bytes, too short for a GGUF header (24 bytes)", g.size)}
	}
	magic := d.read(4)
	if string(magic) != Magic {
		return &FormatError{File: g.Path, Offset: 0, Msg: fmt.Sprintf("magic %q is not %q: not a GGUF file", magic, Magic)}
	}
	g.Version = d.u32()
	if g.Version != 2 && g.Version != 3 {
		return &FormatError{File: g.Path, Offset: 4, Msg: fmt.Sprintf("GGUF version %d is not supported (2 or 3; big-endian files read as a huge version)", g.Version)}
	}
	nT := d.count("tensor", 8+4+8+4+8, maxTensors)
	nKV := d.count("metadata", 8+4+1, maxKVs)
	if d.err != nil {
		return d.err
	}
	g.kvIndex = make(map[string]int, min(nKV, 1024)) // grows with what is really there
	for i := int64(0); i < nKV; i++ {
		at := d.off
		kv := KV{Key: d.str()}
		kv.Type = ValueType(d.u32())
		if d.err != nil {
			return d.err
		}
		if _, dup := g.kvIndex[kv.Key]; dup {
			return &FormatError{File: g.Path, Offset: at, Key: kv.Key, Msg: "duplicate metadata key"}
		}
		switch {
		case kv.Type == ValArray:
			kv.Elem, kv.Value = d.array(0)
		case kv.Type.fixedSize() > 0 || kv.Type == ValString:
			kv.Value = d.scalar(kv.Type)
		default:
			return &FormatError{File: g.Path, Offset: at, Key: kv.Key, Msg: fmt.Sprintf("value type %d is not a GGUF value type", uint32(kv.Type))}
		}
		if d.err != nil {
			return d.err
		}
		g.kvIndex[kv.Key] = len(g.KVs)
		g.KVs = append(g.KVs, kv)
	}
	g.Alignment = DefaultAlignment
	if kv, ok := g.KV("general.alignment"); ok {
		a, isU32 := kv.Value.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			return &FormatError{File: g.Path, Offset: -1, Key: "general.alignment", Msg: fmt.Sprintf("must be a u32 power of two, got %s %v", kv.Type, kv.Value)}
		}
		g.Alignment = int64(a)
	}
	g.tIndex = make(map[string]int, min(nT, 4096))
	g.Tensors = make([]TensorInfo, 0, min(nT, 4096))
	for i := int64(0); i < nT; i++ {
		at := d.off
		t := TensorInfo{Name: d.str()}
		nd := d.u32()
		if d.err != nil {
			return d.err
		}
		fail := func(format string, args ...any) error {
			return &FormatError{File: g.Path, Offset: at, Tensor: t.Name, Msg: fmt.Sprintf(format, args...)}
		}
		if nd == 0 || nd > maxDims {
			return fail("%d dimensions (GGUF allows 1 to %d)", nd, maxDims)
		}
		t.Ne = make([]int64, nd)
		for j := range t.Ne {
			t.Ne[j] = int64(d.u64())
		}
		t.Type = Type(d.u32())
		t.RelOffset = int64(d.u64())
		if d.err != nil {
			return d.err
		}
		if _, dup := g.tIndex[t.Name]; dup {
			return fail("duplicate tensor name")
		}
		if !t.Type.Known() {
			return fail("ggml type %d is unknown to edgectl", uint32(t.Type))
		}
		elems := int64(1)
		for j, n := range t.Ne {
			if n < 0 || (n > 0 && elems > math.MaxInt64/n) {
				return fail("dimension ne[%d] = %d is out of range (%s)", j, uint64(n), fixRedo)
			}
			elems *= n
		}
		if bs := t.Type.BlockSize(); t.Ne[0]%bs != 0 {
			return fail("ne[0] = %d is not a multiple of the %s block size %d", t.Ne[0], t.Type, bs)
		}
		if t.Ne[0]/t.Type.BlockSize() > math.MaxInt64/t.Type.TypeSize() {
			return fail("%s %v is too large to address", t.Type, t.Ne)
		}
		rowSize, rows := t.Type.RowSize(t.Ne[0]), t.Rows()
		if rows > 0 && rowSize > math.MaxInt64/rows {
			return fail("%s %v is too large to address", t.Type, t.Ne)
		}
		t.Size = rowSize * rows
		if t.RelOffset < 0 || t.RelOffset%g.Alignment != 0 {
			return fail("data offset %d is not a multiple of the alignment %d", t.RelOffset, g.Alignment)
		}
		g.tIndex[t.Name] = len(g.Tensors)
		g.Tensors = append(g.Tensors, t)
	}
	g.DataOffset = (d.off + g.Alignment - 1) / g.Alignment * g.Alignment
	dataSize := g.size - g.DataOffset
	for i := range g.Tensors {
		t := &g.Tensors[i]
		t.Offset = g.DataOffset + t.RelOffset
		if t.RelOffset > dataSize || t.Size > dataSize-t.RelOffset {
			return &FormatError{File: g.Path, Offset: t.Offset, Tensor: t.Name,
				Msg: fmt.Sprintf("%s %v needs %d bytes at data offset %d, but the data section is %d bytes (file truncated: download or convert it again)", t.Type, t.Ne, t.Size, t.RelOffset, dataSize)}
		}
	}
	// Overlapping tensors mean a corrupt table.
	byOff := make([]int, len(g.Tensors))
	for i := range byOff {
		byOff[i] = i
	}
	sortByOffset(byOff, g.Tensors)
	for i := 1; i < len(byOff); i++ {
		a, b := g.Tensors[byOff[i-1]], g.Tensors[byOff[i]]
		if a.Size > 0 && b.RelOffset < a.RelOffset+a.Size {
			return &FormatError{File: g.Path, Offset: b.Offset, Tensor: b.Name, Msg: fmt.Sprintf("overlaps tensor %q (bytes %d..%d)", a.Name, a.Offset, a.Offset+a.Size)}
		}
	}
	return nil
}

func sortByOffset(idx []int, ts []TensorInfo) {
	sort.Slice(idx, func(i, j int) bool { return ts[idx[i]].RelOffset < ts[idx[j]].RelOffset })
}

// KV looks a metadata pair up by key.
func (g *File) KV(key string) (KV, bool) {
	i, ok := g.kvIndex[key]
	if !ok {
		return KV{}, false
	}
	return g.KVs[i], true
}

// Tensor looks a tensor up by name.
func (g *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := g.tIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return g.Tensors[i], true
}

// Architecture is general.architecture ("" when absent).
func (g *File) Architecture() string {
	s, _ := g.String("general.architecture")
	return s
}

// ErrMissingKey is returned (wrapped) by the typed getters for absent keys.
var ErrMissingKey = errors.New("metadata key missing")

func (g *File) get(key string) (KV, error) {
	kv, ok := g.KV(key)
	if !ok {
		return kv, fmt.Errorf("%s: %w: %q", g.Path, ErrMissingKey, key)
	}
	return kv, nil
}

func (g *File) typeErr(kv KV, want string) error {
	return &FormatError{File: g.Path, Offset: -1, Key: kv.Key, Msg: fmt.Sprintf("is %s, want %s", kv.Type, want)}
}

// String returns a string value.
func (g *File) String(key string) (string, error) {
	kv, err := g.get(key)
	if err != nil {
		return "", err
	}
	s, ok := kv.Value.(string)
	if !ok {
		return "", g.typeErr(kv, "string")
	}
	return s, nil
}

// Int returns any integer value (u8…i64) as int64; a u64 above MaxInt64 is
// an error.
func (g *File) Int(key string) (int64, error) {
	kv, err := g.get(key)
	if err != nil {
		return 0, err
	}
	switch v := kv.Value.(type) {
	case uint8:
		return int64(v), nil
	case int8:
		return int64(v), nil
	case uint16:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case int64:
		return v, nil
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v), nil
		}
	}
	return 0, g.typeErr(kv, "an integer")
}

// Float returns an f32 or f64 value (integers are accepted too).
func (g *File) Float(key string) (float64, error) {
	kv, err := g.get(key)
	if err != nil {
		return 0, err
	}
	switch v := kv.Value.(type) {
	case float32:
		return float64(v), nil
	case float64:
		return v, nil
	}
	if i, err := g.Int(key); err == nil {
		return float64(i), nil
	}
	return 0, g.typeErr(kv, "a float")
}

// Bool returns a bool value.
func (g *File) Bool(key string) (bool, error) {
	kv, err := g.get(key)
	if err != nil {
		return false, err
	}
	b, ok := kv.Value.(bool)
	if !ok {
		return false, g.typeErr(kv, "bool")
	}
	return b, nil
}

// Strings returns an array of strings.
func (g *File) Strings(key string) ([]string, error) {
	kv, err := g.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := kv.Value.([]string)
	if !ok {
		return nil, g.typeErr(kv, "array of string")
	}
	return s, nil
}

// Int32s returns an array of i32 (e.g. tokenizer.ggml.token_type).
func (g *File) Int32s(key string) ([]int32, error) {
	kv, err := g.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := kv.Value.([]int32)
	if !ok {
		return nil, g.typeErr(kv, "array of i32")
	}
	return s, nil
}

// Float32s returns an array of f32 (e.g. tokenizer.ggml.scores).
func (g *File) Float32s(key string) ([]float32, error) {
	kv, err := g.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := kv.Value.([]float32)
	if !ok {
		return nil, g.typeErr(kv, "array of f32")
	}
	return s, nil
}

// Bytes returns t's stored bytes as a read-only mmapped view, valid until
// Close (a copy where mmap is unavailable).
func (g *File) Bytes(t TensorInfo) ([]byte, error) {
	b, err := g.f.Slice(t.Offset, t.Size)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", g.Path, t.Name, err)
	}
	return b, nil
}

// Release drops t's mapped pages from the resident set (see mmapfile).
func (g *File) Release(t TensorInfo) { g.f.Release(t.Offset, t.Size) }

// ReleaseRange is Release for bytes [off, off+n) of t's data.
func (g *File) ReleaseRange(t TensorInfo, off, n int64) { g.f.Release(t.Offset+off, n) }

// Reader returns a reader over t's stored bytes.
func (g *File) Reader(t TensorInfo) *io.SectionReader {
	return io.NewSectionReader(g.f, t.Offset, t.Size)
}
