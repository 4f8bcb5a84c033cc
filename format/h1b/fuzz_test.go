package h1b

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func validH1B(t testing.TB, ver int32) []byte {
	h := testHeader(ver)
	_, end, err := Layout(h)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, end)
	copy(body, h.Encode())
	return body
}

func validHtok() []byte {
	var buf bytes.Buffer
	(&Tokenizer{Tokens: []string{"a", "b", "ab", "Ġthe", ""}, Merges: [][3]uint32{{0, 1, 2}}, BOS: 3, EOS: 4}).WriteTo(&buf)
	return buf.Bytes()
}

// TestHostileHeaders: header fields that would size allocations are
// refused with the file, the field's byte offset and the bound.
func TestHostileHeaders(t *testing.T) {
	body := validH1B(t, 2)
	nan := make([]byte, 4)
	binary.LittleEndian.PutUint32(nan, 0x7fc00000)
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"max_seq_len 2^31-1": {patch(body, 32, 1<<31-1), "byte 32: max_seq_len 2147483647 is outside 0..2^24"},
		"max_seq_len -1":     {patch(body, 32, -1), "byte 32: max_seq_len -1"},
		"vocab 2^31-1":       {patch(body, 28, 1<<31-1), "byte 28: vocab_size 2147483647 is outside"},
		"layers 2^31-1":      {patch(body, 16, 1<<31-1), "byte 16: num_layers"},
		"hidden -8":          {patch(body, 8, -8), "byte 8: hidden_size -8"},
		"rope NaN":           {append(append(append([]byte{}, body[:44]...), nan...), body[48:]...), "byte 44: rope_theta NaN"},
		// A vocab that fits the bound but not the file: named by tensor.
		"vocab past the file": {patch(body, 28, 1<<24), `tensor "embedding" [16777216×64] ends at byte`},
	}
	dir := t.TempDir()
	for name, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".h1b")
		must(t, os.WriteFile(p, c.b, 0o644))
		if _, err := Open(p); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p+": ") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestHostileHtok(t *testing.T) {
	le := binary.LittleEndian
	hdr := func(nv, nm uint32) []byte {
		b := make([]byte, 20, 64)
		copy(b, HtokMagic)
		le.PutUint32(b[4:], nv)
		le.PutUint32(b[8:], nm)
		return append(b, 1, 0, 'a')
	}
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"4G tokens":        {hdr(1<<32-1, 0), "byte 4: counts (4294967295 tokens"},
		"4G merges":        {hdr(1, 1<<32-1), "byte 4: counts"},
		"merge past vocab": {append(hdr(1, 1), 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0), "names token 9, past the vocab of 1"},
	}
	for name, c := range cases {
		if _, err := DecodeTokenizer(c.b, "x.htok"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "x.htok: ") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// The .htok sidecar and the .h1b itself are refused when they are FIFOs,
// without blocking; a symlink to a regular file is fine.
func TestSpecialFilesAreRefusedWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	htok, model := filepath.Join(dir, "m.htok"), filepath.Join(dir, "m.h1b")
	for _, p := range []string{htok, model} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	done := make(chan [2]error, 1)
	go func() {
		_, e1 := ReadTokenizer(htok)
		_, e2 := Open(model)
		done <- [2]error{e1, e2}
	}()
	select {
	case errs := <-done:
		for _, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("error %v", err)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked on a FIFO")
	}
	real := filepath.Join(dir, "real.htok")
	must(t, os.WriteFile(real, validHtok(), 0o644))
	link := filepath.Join(dir, "link.htok")
	must(t, os.Symlink(real, link))
	if tok, err := ReadTokenizer(link); err != nil || len(tok.Tokens) != 5 {
		t.Fatalf("symlinked .htok: %v", err)
	}
}

// FuzzH1B: any header and file size are refused or give a layout whose
// every region lies inside the file, back to back from the header on,
// with a header that encodes back to the same bytes. The body's bytes do
// not matter to the reader, only its length: the fuzzer mutates the
// header and the length, and the body reads as zeros without being
// allocated (so a size of 2^40 costs nothing).
func FuzzH1B(f *testing.F) {
	for _, v := range []int32{1, 2, 3, 4} {
		b := validH1B(f, v)
		f.Add(b[:testHeader(v).Size()], int64(len(b)))
	}
	body := validH1B(f, 2)
	f.Add(patch(body, 32, 1<<31-1)[:52], int64(len(body)))
	f.Add(patch(body, 28, 1<<24)[:52], int64(len(body)))
	f.Add(patch(body, 16, 4096)[:52], int64(len(body)))
	f.Add(patch(body, 16, 4096)[:52], int64(1<<40))
	f.Fuzz(func(t *testing.T, hdr []byte, size int64) {
		if size < int64(len(hdr)) {
			size = int64(len(hdr))
		}
		g, err := parse(zeroTail{hdr, size}, size, "fuzz.h1b")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.h1b: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		stored := make([]byte, g.Header.Size())
		zeroTail{hdr, size}.ReadAt(stored, 0)
		if enc := g.Header.Encode(); !bytes.Equal(enc[4:], stored[4:]) {
			t.Fatalf("header %+v does not encode back to its bytes", g.Header)
		}
		off := g.Header.Size()
		for _, ti := range g.Tensors {
			end := ti.Offset + ti.Size
			if ti.Kind == Packed {
				if ti.ScalesOffset != end {
					t.Fatalf("%s: scales not after codes", ti.Name)
				}
				end = ti.ScalesOffset + 4*int64(ti.Rows)
			}
			if ti.Offset != off || end > size || ti.Size < 0 {
				t.Fatalf("%s at [%d, %d) in a %d-byte file, expected at %d", ti.Name, ti.Offset, end, size, off)
			}
			off = end
		}
	})
}

// zeroTail reads as hdr followed by zeros up to size.
type zeroTail struct {
	hdr  []byte
	size int64
}

func (z zeroTail) ReadAt(p []byte, off int64) (int, error) {
	if off >= z.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), z.size-off))
	for i := range n {
		p[i] = 0
		if off+int64(i) < int64(len(z.hdr)) {
			p[i] = z.hdr[off+int64(i)]
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// FuzzHtok: any bytes are refused or decode to a tokenizer that encodes
// back to exactly the same bytes, every merge naming a token.
func FuzzHtok(f *testing.F) {
	f.Add(validHtok())
	f.Add([]byte("HTOK\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("HTOK\x01\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := DecodeTokenizer(b, "fuzz.htok")
		if err != nil {
			return
		}
		for _, m := range tok.Merges {
			for _, id := range m {
				if int(id) >= len(tok.Tokens) {
					t.Fatalf("merge %v names a token past %d", m, len(tok.Tokens))
				}
			}
		}
		var out bytes.Buffer
		if _, err := tok.WriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("re-encoding differs (%v)", err)
		}
	})
}
