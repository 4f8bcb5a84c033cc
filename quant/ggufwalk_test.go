package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"testing"
)

// walkedGGUF is what walkGGUF found. The walker is written from
// formats.md §3 alone and shares no code with format/gguf, so a writer bug
// cannot hide behind a matching reader bug.
type walkedGGUF struct {
	kv      map[string]any
	tensors map[string]walkedTensor
	order   []string
	raw     []byte
}

type walkedTensor struct {
	typ  uint32
	ne   []uint64
	off  uint64 // absolute
	size uint64
}

var walkBlock = map[uint32][2]uint64{0: {1, 4}, 1: {1, 2}, 30: {1, 2}, 34: {256, 54}, 35: {256, 66}}

func walkGGUF(t *testing.T, path string) *walkedGGUF {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	need := func(n int) []byte {
		if pos+n > len(b) {
			t.Fatalf("walker: read of %d bytes at %d past end %d", n, pos, len(b))
		}
		s := b[pos : pos+n]
		pos += n
		return s
	}
	u32 := func() uint32 { return binary.LittleEndian.Uint32(need(4)) }
	u64 := func() uint64 { return binary.LittleEndian.Uint64(need(8)) }
	str := func() string { n := u64(); return string(need(int(n))) }
	var val func(typ uint32) any
	val = func(typ uint32) any {
		switch typ {
		case 0, 1, 7:
			return need(1)[0]
		case 2, 3:
			return binary.LittleEndian.Uint16(need(2))
		case 4:
			return u32()
		case 5:
			return int32(u32())
		case 6:
			return math.Float32frombits(u32())
		case 8:
			return str()
		case 10, 11:
			return u64()
		case 12:
			return math.Float64frombits(u64())
		case 9:
			et := u32()
			n := u64()
			out := make([]any, n)
			for i := range out {
				out[i] = val(et)
			}
			return out
		}
		t.Fatalf("walker: value type %d", typ)
		return nil
	}
	if string(need(4)) != "GGUF" || u32() != 3 {
		t.Fatal("walker: not GGUF v3")
	}
	nt, nkv := u64(), u64()
	w := &walkedGGUF{kv: map[string]any{}, tensors: map[string]walkedTensor{}, raw: b}
	for i := uint64(0); i < nkv; i++ {
		k := str()
		w.kv[k] = val(u32())
	}
	align := uint64(32)
	if a, ok := w.kv["general.alignment"]; ok {
		align = uint64(a.(uint32))
	}
	type rel struct {
		name string
		t    walkedTensor
	}
	var ts []rel
	for i := uint64(0); i < nt; i++ {
		name := str()
		nd := u32()
		var wt walkedTensor
		for j := uint32(0); j < nd; j++ {
			wt.ne = append(wt.ne, u64())
		}
		wt.typ = u32()
		wt.off = u64()
		bs, ok := walkBlock[wt.typ]
		if !ok {
			t.Fatalf("walker: tensor %s type %d", name, wt.typ)
		}
		wt.size = wt.ne[0] / bs[0] * bs[1]
		for _, d := range wt.ne[1:] {
			wt.size *= d
		}
		if wt.off%align != 0 {
			t.Fatalf("walker: tensor %s offset %d not aligned", name, wt.off)
		}
		ts = append(ts, rel{name, wt})
	}
	data := (uint64(pos) + align - 1) / align * align
	for _, p := range b[pos:data] {
		if p != 0 {
			t.Fatal("walker: header padding is not zero")
		}
	}
	end := data
	for _, r := range ts {
		r.t.off += data
		if r.t.off+r.t.size > uint64(len(b)) {
			t.Fatalf("walker: tensor %s runs past the end", r.name)
		}
		if r.t.off != end {
			// the gap since the previous tensor must be zero padding
			for _, p := range b[end:r.t.off] {
				if p != 0 {
					t.Fatalf("walker: non-zero padding before %s", r.name)
				}
			}
		}
		end = r.t.off + r.t.size
		w.tensors[r.name] = r.t
		w.order = append(w.order, r.name)
	}
	if uint64(len(b)) != (end+align-1)/align*align {
		t.Fatalf("walker: file is %d bytes, data ends at %d", len(b), end)
	}
	return w
}

func (w *walkedGGUF) bytes(t *testing.T, name string) []byte {
	t.Helper()
	wt, ok := w.tensors[name]
	if !ok {
		t.Fatalf("walker: no tensor %s (have %v)", name, w.order)
	}
	return w.raw[wt.off : wt.off+wt.size]
}

func (w *walkedGGUF) str(t *testing.T, key string) string {
	s, ok := w.kv[key].(string)
	if !ok {
		t.Fatalf("key %s = %v", key, w.kv[key])
	}
	return s
}

func (w *walkedGGUF) u32(t *testing.T, key string) uint32 {
	v, ok := w.kv[key].(uint32)
	if !ok {
		t.Fatalf("key %s = %#v (want u32)", key, w.kv[key])
	}
	return v
}

func (w *walkedGGUF) strs(t *testing.T, key string) []string {
	a, ok := w.kv[key].([]any)
	if !ok {
		t.Fatalf("key %s = %v", key, w.kv[key])
	}
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = fmt.Sprint(v)
	}
	return out
}
