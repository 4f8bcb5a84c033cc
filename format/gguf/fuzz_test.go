package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileHeader is a GGUF prefix with the given tensor and KV counts,
// followed by one KV whose key length is keyLen.
func hostileHeader(nT, nKV, keyLen uint64) []byte {
	var b le
	b.WriteString(Magic)
	b.u32(3)
	b.u64(nT)
	b.u64(nKV)
	b.u64(keyLen)
	b.WriteString("general.name")
	b.u32(uint32(ValString))
	b.str("x")
	b.zeros(64)
	return b.Bytes()
}

// arrayHeader is a file with one array KV of elem type et and count n.
func arrayHeader(et ValueType, n uint64) []byte {
	var b le
	b.WriteString(Magic)
	b.u32(3)
	b.u64(0)
	b.u64(1)
	b.str("tokenizer.ggml.tokens")
	b.u32(uint32(ValArray))
	b.u32(uint32(et))
	b.u64(n)
	b.zeros(64)
	return b.Bytes()
}

// tensorHeader is a file with one tensor entry of the given dims.
func tensorHeader(typ Type, off uint64, ne ...uint64) []byte {
	var b le
	b.WriteString(Magic)
	b.u32(3)
	b.u64(1)
	b.u64(0)
	b.str("t")
	b.u32(uint32(len(ne)))
	for _, n := range ne {
		b.u64(n)
	}
	b.u32(uint32(typ))
	b.u64(off)
	b.padTo(32)
	b.zeros(64)
	return b.Bytes()
}

func hostileFiles() map[string][]byte {
	return map[string][]byte{
		"tensor count 2^40":       hostileHeader(1<<40, 0, 12),
		"kv count 2^62":           hostileHeader(0, 1<<62, 12),
		"kv count 2^64-1":         hostileHeader(0, ^uint64(0), 12),
		"key length 2^40":         hostileHeader(0, 1, 1<<40),
		"string array 2^40":       arrayHeader(ValString, 1<<40),
		"u32 array 2^61":          arrayHeader(ValU32, 1<<61),
		"nested array 2^40":       arrayHeader(ValArray, 1<<40),
		"bad element type":        arrayHeader(ValueType(99), 1),
		"dims overflow":           tensorHeader(TypeF32, 0, 1<<32, 1<<32),
		"dims huge":               tensorHeader(TypeF32, 0, 1<<62, 4),
		"offset past the end":     tensorHeader(TypeF32, 1<<40, 4),
		"offset not aligned":      tensorHeader(TypeF32, 3, 4),
		"5 dims":                  tensorHeader(TypeF32, 0, 1, 1, 1, 1, 1),
		"unknown type":            tensorHeader(Type(4), 0, 4),
		"block size not multiple": tensorHeader(TypeQ4_0, 0, 31),
	}
}

// TestHostileCountsAndSizes: every count, length and dimension is checked
// against the file before anything is allocated, with an error naming the
// file and the byte offset.
func TestHostileCountsAndSizes(t *testing.T) {
	dir := t.TempDir()
	for name, b := range hostileFiles() {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".gguf")
		must(t, os.WriteFile(p, b, 0o644))
		_, err := Open(p)
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), p+": ") {
			t.Errorf("%s: %v, want a FormatError naming the file", name, err)
		} else if fe.Offset < 0 && fe.Key == "" {
			t.Errorf("%s: %v names no byte offset", name, err)
		}
	}
}

func TestOpenRefusesAFIFOWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Open(p); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open blocked on a FIFO")
	}
}

// FuzzParse: any bytes parse or fail with a FormatError; an accepted file
// has every tensor inside the file, aligned and non-overlapping, and
// writing it back out through Writer gives a file that parses and
// rewrites to identical bytes.
func FuzzParse(f *testing.F) {
	var valid bytes.Buffer
	w := NewWriter(&valid)
	w.Set("general.architecture", "llama")
	w.Set("general.alignment", uint32(64))
	w.Set("tokenizer.ggml.tokens", []string{"a", "bc"})
	w.Set("tokenizer.ggml.scores", []float32{0, -1})
	w.Set("x.flags", []bool{true})
	w.Set("x.u64", uint64(7))
	w.AddTensor("w", TypeF16, 4, 2)
	w.AddTensor("q", TypeTQ2_0, 256)
	w.WriteHeader()
	w.Write(make([]byte, 16+66))
	w.Finish()
	f.Add(valid.Bytes())
	for _, b := range hostileFiles() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := parseBytes(b)
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error %T is not a FormatError: %v", err, err)
			}
			return
		}
		for _, ti := range g.Tensors {
			if ti.Offset < g.DataOffset || ti.Size < 0 || ti.Offset+ti.Size > int64(len(b)) || ti.RelOffset%g.Alignment != 0 {
				t.Fatalf("accepted tensor %+v outside the %d-byte file or unaligned", ti, len(b))
			}
		}
		once, ok := rewriteGGUF(t, g, b)
		if !ok {
			return // nested arrays: the writer does not produce them
		}
		g2, err := parseBytes(once)
		if err != nil {
			t.Fatalf("our own output is refused: %v", err)
		}
		if len(g2.KVs) != len(g.KVs) || len(g2.Tensors) != len(g.Tensors) {
			t.Fatalf("round trip changed counts: %d/%d KVs, %d/%d tensors", len(g.KVs), len(g2.KVs), len(g.Tensors), len(g2.Tensors))
		}
		if twice, _ := rewriteGGUF(t, g2, once); !bytes.Equal(once, twice) {
			t.Fatal("rewriting is not stable")
		}
	})
}

func parseBytes(b []byte) (*File, error) {
	g := &File{Path: "fuzz.gguf", size: int64(len(b))}
	return g, g.parse(bytes.NewReader(b))
}

func rewriteGGUF(t *testing.T, g *File, b []byte) ([]byte, bool) {
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, kv := range g.KVs {
		if _, nested := kv.Value.([]any); nested {
			return nil, false
		}
		if err := w.Set(kv.Key, kv.Value); err != nil {
			t.Fatalf("writer refuses an accepted KV %q: %v", kv.Key, err)
		}
	}
	for _, ti := range g.Tensors {
		if err := w.AddTensor(ti.Name, ti.Type, ti.Ne...); err != nil {
			t.Fatalf("writer refuses an accepted tensor: %v", err)
		}
	}
	if err := w.WriteHeader(); err != nil {
		t.Fatal(err)
	}
	for _, ti := range g.Tensors {
		if _, err := w.Write(b[ti.Offset : ti.Offset+ti.Size]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), true
}
