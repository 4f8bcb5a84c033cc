package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// le builds expected bytes by hand, independently of the writer.
type le struct{ bytes.Buffer }

func (b *le) u32(v uint32)  { binary.Write(&b.Buffer, binary.LittleEndian, v) }
func (b *le) u64(v uint64)  { binary.Write(&b.Buffer, binary.LittleEndian, v) }
func (b *le) str(s string)  { b.u64(uint64(len(s))); b.WriteString(s) }
func (b *le) zeros(n int)   { b.Write(make([]byte, n)) }
func (b *le) padTo(a int)   { b.zeros((a - b.Len()%a) % a) }
func (b *le) f32(v float32) { binary.Write(&b.Buffer, binary.LittleEndian, v) }

func TestWriterMatchesHandBuiltBytes(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	must(t, w.Set("general.architecture", "llama"))
	must(t, w.Set("llama.block_count", uint32(2)))
	must(t, w.Set("llama.rope.freq_base", float32(10000)))
	must(t, w.Set("tokenizer.ggml.tokens", []string{"a", "bc"}))
	must(t, w.Set("tokenizer.ggml.token_type", []int32{1, 3}))
	must(t, w.AddTensor("x", TypeF32, 3))        // 12 bytes → padded to 32
	must(t, w.AddTensor("y", TypeF16, 4, 2))     // 16 bytes
	must(t, w.AddTensor("q", TypeTQ2_0, 256, 1)) // 66 bytes
	must(t, w.WriteHeader())
	x := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	y := bytes.Repeat([]byte{0xAB}, 16)
	q := bytes.Repeat([]byte{0x55}, 66)
	// Write across tensor boundaries to show chunking does not matter.
	all := append(append(append([]byte{}, x...), y...), q...)
	for len(all) > 0 {
		n := min(5, len(all))
		if _, err := w.Write(all[:n]); err != nil {
			t.Fatal(err)
		}
		all = all[n:]
	}
	must(t, w.Finish())

	var e le
	e.WriteString("GGUF")
	e.u32(3)
	e.u64(3)
	e.u64(5)
	e.str("general.architecture")
	e.u32(8)
	e.str("llama")
	e.str("llama.block_count")
	e.u32(4)
	e.u32(2)
	e.str("llama.rope.freq_base")
	e.u32(6)
	e.f32(10000)
	e.str("tokenizer.ggml.tokens")
	e.u32(9)
	e.u32(8)
	e.u64(2)
	e.str("a")
	e.str("bc")
	e.str("tokenizer.ggml.token_type")
	e.u32(9)
	e.u32(5)
	e.u64(2)
	e.u32(1)
	e.u32(3)
	e.str("x")
	e.u32(1)
	e.u64(3)
	e.u32(0)
	e.u64(0)
	e.str("y")
	e.u32(2)
	e.u64(4)
	e.u64(2)
	e.u32(1)
	e.u64(32)
	e.str("q")
	e.u32(2)
	e.u64(256)
	e.u64(1)
	e.u32(35)
	e.u64(64)
	e.padTo(32)
	e.Write(x)
	e.padTo(32)
	e.Write(y)
	e.padTo(32)
	e.Write(q)
	e.padTo(32)
	if !bytes.Equal(out.Bytes(), e.Bytes()) {
		t.Fatalf("writer output differs from the hand-built file:\n got %x\nwant %x", out.Bytes(), e.Bytes())
	}

	// The reader sees the same file.
	path := filepath.Join(t.TempDir(), "m.gguf")
	must(t, os.WriteFile(path, out.Bytes(), 0o644))
	g, err := Open(path)
	must(t, err)
	defer g.Close()
	if g.Architecture() != "llama" {
		t.Errorf("architecture %q", g.Architecture())
	}
	if n, err := g.Int("llama.block_count"); err != nil || n != 2 {
		t.Errorf("block_count = %d, %v", n, err)
	}
	if f, err := g.Float("llama.rope.freq_base"); err != nil || f != 10000 {
		t.Errorf("freq_base = %v, %v", f, err)
	}
	if s, err := g.Strings("tokenizer.ggml.tokens"); err != nil || !reflect.DeepEqual(s, []string{"a", "bc"}) {
		t.Errorf("tokens = %v, %v", s, err)
	}
	if s, err := g.Int32s("tokenizer.ggml.token_type"); err != nil || !reflect.DeepEqual(s, []int32{1, 3}) {
		t.Errorf("token_type = %v, %v", s, err)
	}
	if _, err := g.String("llama.block_count"); err == nil || !strings.Contains(err.Error(), "is u32, want string") {
		t.Errorf("type mismatch error = %v", err)
	}
	if _, err := g.String("nope"); !errors.Is(err, ErrMissingKey) {
		t.Errorf("missing key error = %v", err)
	}
	want := map[string][]byte{"x": x, "y": y, "q": q}
	for _, ti := range g.Tensors {
		b, err := g.Bytes(ti)
		must(t, err)
		if !bytes.Equal(b, want[ti.Name]) {
			t.Errorf("tensor %s bytes %x", ti.Name, b)
		}
	}
	q2, _ := g.Tensor("q")
	if q2.Type != TypeTQ2_0 || q2.Size != 66 || !reflect.DeepEqual(q2.Ne, []int64{256, 1}) || q2.Offset != g.DataOffset+64 {
		t.Errorf("q info %+v", q2)
	}
}

func TestReaderRejectsCorruptFiles(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	must(t, w.Set("general.architecture", "bitnet"))
	must(t, w.AddTensor("blk.0.attn_q.weight", TypeTQ1_0, 256, 2))
	must(t, w.WriteHeader())
	w.Write(make([]byte, 108))
	must(t, w.Finish())
	good := out.Bytes()
	dir := t.TempDir()
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated data", good[:len(good)-40], `tensor "blk.0.attn_q.weight": TQ1_0 [256 2] needs 108 bytes`},
		{"truncated header", good[:60], "unexpected end of file"},
		{"magic", append([]byte("GGUX"), good[4:]...), "not a GGUF file"},
		{"ne0", patchNe0(good, 100), "ne[0] = 100 is not a multiple of the TQ1_0 block size 256"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		must(t, os.WriteFile(p, c.b, 0o644))
		_, err := Open(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want it to name the file and say %q", c.name, err, c.want)
		}
	}
	if err := NewWriter(&out).AddTensor("t", TypeTQ2_0, 100); err == nil || !strings.Contains(err.Error(), "multiple of the TQ2_0 block size") {
		t.Errorf("writer accepted a bad ne0: %v", err)
	}
	if err := NewWriter(&out).Set("k", 3); err == nil {
		t.Error("writer accepted a plain int")
	}
}

// patchNe0 rewrites ne[0] of the only tensor (found by its name).
func patchNe0(b []byte, v uint64) []byte {
	c := append([]byte{}, b...)
	i := bytes.Index(c, []byte("blk.0.attn_q.weight")) + len("blk.0.attn_q.weight") + 4
	binary.LittleEndian.PutUint64(c[i:], v)
	return c
}

func TestTypeSizes(t *testing.T) {
	for _, c := range []struct {
		t          Type
		name       string
		block, row int64
	}{{TypeF32, "F32", 1, 4 * 2560}, {TypeF16, "F16", 1, 2 * 2560}, {TypeBF16, "BF16", 1, 2 * 2560},
		{TypeTQ1_0, "TQ1_0", 256, 10 * 54}, {TypeTQ2_0, "TQ2_0", 256, 10 * 66},
		// ggml-common.h's block structs: the scales, then the codes.
		{TypeQ8_0, "Q8_0", 32, 80 * (2 + 32)}, {TypeQ4_0, "Q4_0", 32, 80 * (2 + 16)}, {TypeQ4_1, "Q4_1", 32, 80 * (4 + 16)},
		{TypeQ5_0, "Q5_0", 32, 80 * (2 + 4 + 16)}, {TypeQ5_1, "Q5_1", 32, 80 * (4 + 4 + 16)}, {TypeIQ4_NL, "IQ4_NL", 32, 80 * (2 + 16)},
		{TypeQ2_K, "Q2_K", 256, 10 * (16 + 64 + 4)}, {TypeQ3_K, "Q3_K", 256, 10 * (32 + 64 + 12 + 2)},
		{TypeQ4_K, "Q4_K", 256, 10 * (4 + 12 + 128)}, {TypeQ5_K, "Q5_K", 256, 10 * (4 + 12 + 32 + 128)},
		{TypeQ6_K, "Q6_K", 256, 10 * (128 + 64 + 16 + 2)}} {
		if c.t.String() != c.name || c.t.BlockSize() != c.block || c.t.RowSize(2560) != c.row {
			t.Errorf("%v: name %s block %d row %d", c.name, c.t, c.t.BlockSize(), c.t.RowSize(2560))
		}
		if got, ok := TypeByName(strings.ToLower(c.name)); !ok || got != c.t {
			t.Errorf("TypeByName(%s) = %v", c.name, got)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReaderSurvivesCorruption flips bytes and truncates a valid file at
// every header position: Open must return an error or a consistent file,
// never panic or allocate absurdly.
func TestReaderSurvivesCorruption(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	must(t, w.Set("general.architecture", "llama"))
	must(t, w.Set("tokenizer.ggml.tokens", []string{"a", "b", "c"}))
	must(t, w.Set("x.f", []float32{1, 2}))
	must(t, w.AddTensor("a", TypeF32, 4))
	must(t, w.AddTensor("b", TypeTQ2_0, 256, 2))
	must(t, w.WriteHeader())
	w.Write(make([]byte, 16+132))
	must(t, w.Finish())
	good := out.Bytes()
	dir := t.TempDir()
	p := filepath.Join(dir, "c.gguf")
	hdrEnd := bytes.Index(good, []byte{'b', 2, 0, 0, 0}) + 40
	for i := 0; i < hdrEnd && i < len(good); i++ {
		for _, v := range []byte{0xFF, 0x00, 0x7F} {
			c := append([]byte{}, good...)
			c[i] = v
			must(t, os.WriteFile(p, c, 0o644))
			if g, err := Open(p); err == nil {
				for _, ti := range g.Tensors {
					if _, err := g.Bytes(ti); err != nil {
						t.Fatal(err)
					}
				}
				g.Close()
			}
		}
		must(t, os.WriteFile(p, good[:i], 0o644))
		if g, err := Open(p); err == nil {
			g.Close()
			if i < len(good)-1 {
				t.Fatalf("truncated at %d accepted", i)
			}
		}
	}
}
