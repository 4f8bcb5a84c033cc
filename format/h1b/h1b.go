// Package h1b reads and writes the legacy 1bit-systems `.h1b` container
// (versions 1–4) and its `.htok` tokenizer sidecar, byte-exactly as
// rocm-cpp's h1b_loader.cpp and 1bit-core's h1b.rs do (formats.md §6, §9).
//
// A .h1b has no tensor table: a fixed header, then tensors back to back in
// a fixed order whose offsets follow from the header. This package names
// them so the rest of edgectl can address them: `embedding`, `final_norm`,
// and `layers.N.{input_norm,post_attn_norm,attn_sub_norm,ffn_sub_norm,
// q,k,v,o,gate,up,down}`. The duplicate norm copies the format carries
// (three attn_sub_norm copies, two truncated ffn_sub_norm copies) are
// listed with Kind Skipped so they can be inspected and are written
// byte-exactly, but readers ignore them.
//
// Packed matrices hold codes only; the row codecs live in package quant
// (HALO_V2, base-3 "TQ1") and package sherry (Sherry 1.25-bit). Each packed
// matrix is followed by f32 per-row scales: W ≈ scales[row]·q.
package h1b

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Magic is the 4-byte file signature.
const Magic = "H1B\x00"

// Versions and what they pack.
const (
	V1HALO2  = 1 // HALO_V2 2 bpw, 44-byte header
	V2HALO2  = 2 // HALO_V2 2 bpw
	V3Sherry = 3 // Sherry 1.25 bpw
	V4TQ1    = 4 // halo base-3 "TQ1", 1.6 bpw (not llama TQ1_0)
)

// Flags (cfg[8]).
const (
	FlagHadamardRotated = 0x1
	FlagSherryFP16      = 0x2
	FlagBonsaiQ1        = 0x4
	FlagBonsaiTQ2       = 0x8
	FlagBlockScaled     = 0x10
)

// Defaults applied when a v1 file, or a v≥2 field ≤ 0, gives no value.
const (
	DefaultRopeTheta  = 500000
	DefaultRMSNormEps = 1e-5
)

// Header is the fixed file header.
type Header struct {
	Version          int32
	HiddenSize       int32
	IntermediateSize int32
	NumLayers        int32
	NumHeads         int32
	NumKVHeads       int32
	VocabSize        int32
	MaxSeqLen        int32
	TieEmbeddings    int32
	Flags            int32
	// RopeTheta and RMSNormEps are stored from version 2 on, as written;
	// use Theta and Eps for the effective values.
	RopeTheta  float32
	RMSNormEps float32
}

// Size is the header's byte length: 44 for v1, 52 otherwise.
func (h Header) Size() int64 {
	if h.Version < 2 {
		return 44
	}
	return 52
}

// HeadDim is hidden_size / num_heads.
func (h Header) HeadDim() int { return int(h.HiddenSize / h.NumHeads) }

// Theta is the effective RoPE base (500000 for v1 or a value ≤ 0).
func (h Header) Theta() float32 {
	if h.Version < 2 || h.RopeTheta <= 0 {
		return DefaultRopeTheta
	}
	return h.RopeTheta
}

// Eps is the effective RMSNorm epsilon (1e-5 for v1 or a value ≤ 0).
func (h Header) Eps() float32 {
	if h.Version < 2 || h.RMSNormEps <= 0 {
		return DefaultRMSNormEps
	}
	return h.RMSNormEps
}

// Packing names the weight packing of a version: "halo2", "sherry", "tq1h".
func Packing(version int32) string {
	switch version {
	case 1, 2:
		return "halo2"
	case 3:
		return "sherry"
	case 4:
		return "tq1h"
	}
	return fmt.Sprintf("v%d", version)
}

// RowBytes is the packed size of one row of k weights.
func RowBytes(version int32, k int) (int, error) {
	switch version {
	case 1, 2:
		return (k + 3) / 4, nil
	case 3:
		if k%32 != 0 {
			return 0, fmt.Errorf("Sherry (.h1b v3) needs rows that are a multiple of 32 weights, got %d", k)
		}
		return k * 5 / 32, nil
	case 4:
		return (k + 19) / 20 * 4, nil
	}
	return 0, fmt.Errorf(".h1b version %d is not supported (1–4)", version)
}

// Encode returns the header bytes.
func (h Header) Encode() []byte {
	b := make([]byte, h.Size())
	copy(b, Magic)
	le := binary.LittleEndian
	for i, v := range []int32{h.Version, h.HiddenSize, h.IntermediateSize, h.NumLayers, h.NumHeads,
		h.NumKVHeads, h.VocabSize, h.MaxSeqLen, h.TieEmbeddings, h.Flags} {
		le.PutUint32(b[4+4*i:], uint32(v))
	}
	if h.Version >= 2 {
		le.PutUint32(b[44:], math.Float32bits(h.RopeTheta))
		le.PutUint32(b[48:], math.Float32bits(h.RMSNormEps))
	}
	return b
}

// DecodeHeader parses and validates a header from the file's first bytes
// (at least 52, or 44 for v1).
func DecodeHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < 44 {
		return h, fmt.Errorf("%d bytes is too short for an .h1b header (44 bytes)", len(b))
	}
	if string(b[:3]) != Magic[:3] {
		return h, fmt.Errorf("magic %q is not %q: not an .h1b file", b[:4], Magic)
	}
	le := binary.LittleEndian
	f := []*int32{&h.Version, &h.HiddenSize, &h.IntermediateSize, &h.NumLayers, &h.NumHeads,
		&h.NumKVHeads, &h.VocabSize, &h.MaxSeqLen, &h.TieEmbeddings, &h.Flags}
	for i, p := range f {
		*p = int32(le.Uint32(b[4+4*i:]))
	}
	if h.Version >= 2 {
		if len(b) < 52 {
			return h, fmt.Errorf("%d bytes is too short for an .h1b v%d header (52 bytes)", len(b), h.Version)
		}
		h.RopeTheta = math.Float32frombits(le.Uint32(b[44:]))
		h.RMSNormEps = math.Float32frombits(le.Uint32(b[48:]))
	}
	if err := h.Validate(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return h, fmt.Errorf("byte %d: %w (the header is corrupt, or the file is not an .h1b: re-export it, e.g. `edgectl quant pack`)", fieldOffset[fe.field], err)
		}
		return h, err
	}
	return h, nil
}

// MaxSeqLenLimit bounds max_seq_len: a context past 16M positions is a
// corrupt header, not a model (and readers size a KV cache from it).
const MaxSeqLenLimit = 1 << 24

// fieldError is a Validate fault in one header field; DecodeHeader adds
// the field's byte offset.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return e.msg }

func badField(field, format string, args ...any) error {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

var fieldOffset = map[string]int{"version": 4, "hidden_size": 8, "intermediate_size": 12, "num_layers": 16,
	"num_heads": 20, "num_kv_heads": 24, "vocab_size": 28, "max_seq_len": 32, "flags": 40, "rope_theta": 44, "rms_norm_eps": 48}

// Validate applies the loaders' bounds (OS h1b_loader.cpp) and rejects
// what this package cannot lay out.
func (h Header) Validate() error {
	switch {
	case h.Version == 5:
		return badField("version", ".h1b v5 (int8 WMMA) is not supported: repack to v2, v3 or v4")
	case h.Version < 1 || h.Version > 4:
		return badField("version", ".h1b version %d is not supported (1–4)", h.Version)
	case h.Flags&(FlagBonsaiQ1|FlagBonsaiTQ2) != 0:
		return badField("flags", "flags 0x%x: Bonsai payloads (0x4, 0x8) are not supported", h.Flags)
	case h.NumLayers <= 0 || h.NumLayers > 4096:
		return badField("num_layers", "num_layers %d is outside 1..4096", h.NumLayers)
	case h.HiddenSize <= 0 || h.HiddenSize > 65536:
		return badField("hidden_size", "hidden_size %d is outside 1..65536", h.HiddenSize)
	case h.IntermediateSize <= 0 || h.IntermediateSize > 262144:
		return badField("intermediate_size", "intermediate_size %d is outside 1..262144", h.IntermediateSize)
	case h.NumHeads <= 0 || h.NumKVHeads <= 0 || h.NumHeads%h.NumKVHeads != 0:
		return badField("num_heads", "num_heads %d is not a positive multiple of num_kv_heads %d", h.NumHeads, h.NumKVHeads)
	case h.HiddenSize%h.NumHeads != 0:
		return badField("hidden_size", "hidden_size %d is not a multiple of num_heads %d", h.HiddenSize, h.NumHeads)
	case h.VocabSize <= 0 || h.VocabSize > 1<<24:
		return badField("vocab_size", "vocab_size %d is outside 1..2^24", h.VocabSize)
	case h.MaxSeqLen < 0 || h.MaxSeqLen > MaxSeqLenLimit:
		return badField("max_seq_len", "max_seq_len %d is outside 0..2^24", h.MaxSeqLen)
	case h.Version >= 2 && !finite(h.RopeTheta):
		return badField("rope_theta", "rope_theta %v is not a finite number", h.RopeTheta)
	case h.Version >= 2 && !finite(h.RMSNormEps):
		return badField("rms_norm_eps", "rms_norm_eps %v is not a finite number", h.RMSNormEps)
	}
	if h.Version == 3 && (h.HiddenSize%32 != 0 || h.IntermediateSize%32 != 0) {
		return badField("hidden_size", "Sherry (.h1b v3) needs hidden_size %d and intermediate_size %d to be multiples of 32", h.HiddenSize, h.IntermediateSize)
	}
	return nil
}

func finite(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// Kind says how a region of the body is stored.
type Kind int

const (
	// F32 is a little-endian float32 vector or matrix.
	F32 Kind = iota
	// Packed is a packed ternary matrix followed by f32 per-row scales.
	Packed
	// Skipped is a duplicate norm copy that readers ignore (stored as F32).
	Skipped
)

func (k Kind) String() string {
	return [...]string{"F32", "packed", "skipped"}[k]
}

// Tensor is one region of the body.
type Tensor struct {
	Name string
	Kind Kind
	// Rows × K: a matrix has Rows output channels of K inputs; a vector
	// has Rows = 1.
	Rows, K int
	// Offset and Size locate the stored values (F32) or packed codes
	// (Packed), in absolute file bytes.
	Offset, Size int64
	// ScalesOffset locates Packed's f32[Rows] scales (4·Rows bytes).
	ScalesOffset int64
}

// LinearNames are the packed matrices of a layer, in file order.
var LinearNames = []string{"q", "k", "v", "o", "gate", "up", "down"}

// Layout computes every region's position from the header. end is the
// offset just past the last layer.
func Layout(h Header) (ts []Tensor, end int64, err error) { return layout(h, math.MaxInt64) }

// layout is Layout that stops at the first region ending past stop (a
// reader's file size), returning it last with end > stop: a corrupt
// header's 4096 layers are not laid out just to report a short file.
func layout(h Header, stop int64) (ts []Tensor, end int64, err error) {
	if err := h.Validate(); err != nil {
		return nil, 0, err
	}
	hs, is := int(h.HiddenSize), int(h.IntermediateSize)
	hd := h.HeadDim()
	nh, nkv := int(h.NumHeads), int(h.NumKVHeads)
	off := h.Size()
	vec := func(name string, kind Kind, n int) {
		ts = append(ts, Tensor{Name: name, Kind: kind, Rows: 1, K: n, Offset: off, Size: 4 * int64(n)})
		off += 4 * int64(n)
	}
	ts = append(ts, Tensor{Name: "embedding", Kind: F32, Rows: int(h.VocabSize), K: hs, Offset: off, Size: 4 * int64(h.VocabSize) * int64(hs)})
	off += ts[0].Size
	if off > stop {
		return ts, off, nil
	}
	vec("final_norm", F32, hs)
	shapes := [][2]int{{nh * hd, hs}, {nkv * hd, hs}, {nkv * hd, hs}, {hs, nh * hd}, {is, hs}, {is, hs}, {hs, is}}
	for l := 0; l < int(h.NumLayers); l++ {
		if off > stop {
			break // the previous layer's last region does not fit
		}
		p := fmt.Sprintf("layers.%d.", l)
		vec(p+"input_norm", F32, hs)
		vec(p+"post_attn_norm", F32, hs)
		vec(p+"attn_sub_norm", F32, hs)
		for c := 0; c < 3; c++ {
			vec(fmt.Sprintf("%sattn_sub_norm.copy%d", p, c), Skipped, hs)
		}
		for c := 0; c < 2; c++ {
			vec(fmt.Sprintf("%sffn_sub_norm.trunc%d", p, c), Skipped, hs)
		}
		vec(p+"ffn_sub_norm", F32, is)
		for i, name := range LinearNames {
			rows, k := shapes[i][0], shapes[i][1]
			rb, err := RowBytes(h.Version, k)
			if err != nil {
				return nil, 0, fmt.Errorf("%s%s: %w", p, name, err)
			}
			t := Tensor{Name: p + name, Kind: Packed, Rows: rows, K: k, Offset: off, Size: int64(rows) * int64(rb)}
			t.ScalesOffset = off + t.Size
			off = t.ScalesOffset + 4*int64(rows)
			ts = append(ts, t)
		}
	}
	return ts, off, nil
}
