package h1b

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func testHeader(version int32) Header {
	return Header{Version: version, HiddenSize: 64, IntermediateSize: 96, NumLayers: 2, NumHeads: 4, NumKVHeads: 2,
		VocabSize: 10, MaxSeqLen: 128, TieEmbeddings: 1, RopeTheta: 10000, RMSNormEps: 1e-6}
}

func vals(seed, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(seed*1000+i) * 0.25
	}
	return v
}

func f32b(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// TestWriterLayoutByHand writes every version and compares with a body
// assembled by hand from formats.md §6, then reads it back.
func TestWriterLayoutByHand(t *testing.T) {
	for _, ver := range []int32{1, 2, 3, 4} {
		t.Run(fmt.Sprint("v", ver), func(t *testing.T) {
			h := testHeader(ver)
			hs, is, hd := 64, 96, 16
			var out, want bytes.Buffer
			w, err := NewWriter(&out, h)
			if err != nil {
				t.Fatal(err)
			}
			// hand-built header
			want.WriteString("H1B\x00")
			for _, v := range []int32{ver, 64, 96, 2, 4, 2, 10, 128, 1, 0} {
				binary.Write(&want, binary.LittleEndian, v)
			}
			if ver >= 2 {
				binary.Write(&want, binary.LittleEndian, float32(10000))
				binary.Write(&want, binary.LittleEndian, float32(1e-6))
			}
			emb := vals(1, 10*hs)
			must(t, w.WriteF32("embedding", emb[:300])) // in pieces
			must(t, w.WriteF32("embedding", emb[300:]))
			want.Write(f32b(emb))
			fn := vals(2, hs)
			must(t, w.WriteF32("final_norm", fn))
			want.Write(f32b(fn))
			rowBytes := map[int32]func(k int) int{1: func(k int) int { return k / 4 }, 2: func(k int) int { return k / 4 },
				3: func(k int) int { return k * 5 / 32 }, 4: func(k int) int { return (k + 19) / 20 * 4 }}[ver]
			shapes := [][2]int{{4 * hd, hs}, {2 * hd, hs}, {2 * hd, hs}, {hs, 4 * hd}, {is, hs}, {is, hs}, {hs, is}}
			for l := 0; l < 2; l++ {
				p := fmt.Sprintf("layers.%d.", l)
				in, post, asub, fsub := vals(10*l+3, hs), vals(10*l+4, hs), vals(10*l+5, hs), vals(10*l+6, is)
				must(t, w.WriteF32(p+"input_norm", in))
				must(t, w.WriteF32(p+"post_attn_norm", post))
				must(t, w.WriteF32(p+"attn_sub_norm", asub))
				must(t, w.WriteF32(p+"ffn_sub_norm", fsub))
				for _, v := range [][]float32{in, post, asub, asub, asub, asub, fsub[:hs], fsub[:hs], fsub} {
					want.Write(f32b(v))
				}
				for i, name := range LinearNames {
					rows, k := shapes[i][0], shapes[i][1]
					codes := bytes.Repeat([]byte{byte(l*16 + i)}, rows*rowBytes(k))
					sc := vals(100+i, rows)
					must(t, w.WritePacked(p+name, codes[:7]))
					must(t, w.WritePacked(p+name, codes[7:]))
					must(t, w.WriteScales(p+name, sc))
					want.Write(codes)
					want.Write(f32b(sc))
				}
			}
			must(t, w.Finish())
			if !bytes.Equal(out.Bytes(), want.Bytes()) {
				t.Fatalf("writer output (%d bytes) differs from the hand-built body (%d bytes)", out.Len(), want.Len())
			}

			path := filepath.Join(t.TempDir(), "m.h1b")
			must(t, os.WriteFile(path, append(out.Bytes(), 1, 2, 3, 4), 0o644)) // trailing bytes are ignored
			f, err := Open(path)
			must(t, err)
			defer f.Close()
			if ver == 1 { // v1 does not store rope_theta/eps
				h.RopeTheta, h.RMSNormEps = 0, 0
			}
			if f.Header != h || f.End != int64(out.Len()) {
				t.Errorf("header %+v end %d", f.Header, f.End)
			}
			e, _ := f.Tensor("embedding")
			if got, _ := f.Float32(e); !reflect.DeepEqual(got, emb) {
				t.Error("embedding differs")
			}
			fs, _ := f.Tensor("layers.1.ffn_sub_norm")
			if got, _ := f.Float32(fs); !reflect.DeepEqual(got, vals(16, is)) {
				t.Error("ffn_sub_norm differs")
			}
			dn, ok := f.Tensor("layers.1.down")
			if !ok || dn.Rows != hs || dn.K != is || f.RowBytes(dn) != rowBytes(is) {
				t.Fatalf("down %+v", dn)
			}
			b, _ := f.Bytes(dn)
			if !bytes.Equal(b, bytes.Repeat([]byte{16 + 6}, hs*rowBytes(is))) {
				t.Error("down codes differ")
			}
			if sc, _ := f.Scales(dn); !reflect.DeepEqual(sc, vals(106, hs)) {
				t.Error("down scales differ")
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	h := testHeader(2)
	_, end, err := Layout(h)
	must(t, err)
	dir := t.TempDir()
	body := make([]byte, end)
	copy(body, h.Encode())
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"truncated": {body[:end-5], `tensor "layers.1.down" [64×96] ends at byte`},
		"magic":     {append([]byte("GGUF"), body[4:]...), "not an .h1b file"},
		"v5":        {patch(body, 4, 5), "v5 (int8 WMMA) is not supported"},
		"heads":     {patch(body, 20, 3), "num_heads 3 is not a positive multiple of num_kv_heads 2"},
		"bonsai":    {patch(body, 40, FlagBonsaiTQ2), "Bonsai"},
	}
	for name, c := range cases {
		p := filepath.Join(dir, name+".h1b")
		must(t, os.WriteFile(p, c.b, 0o644))
		if _, err := Open(p); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := RowBytes(3, 100); err == nil || !strings.Contains(err.Error(), "multiple of 32") {
		t.Errorf("RowBytes(3, 100) error %v", err)
	}
	if n, _ := RowBytes(4, 6912); n != 1384 {
		t.Errorf("v4 row bytes of 6912 = %d, want 1384 (formats.md §6)", n)
	}
	var out bytes.Buffer
	w, _ := NewWriter(&out, h)
	if err := w.WriteF32("final_norm", vals(0, 64)); err == nil || !strings.Contains(err.Error(), `needs "embedding" next`) {
		t.Errorf("out-of-order write: %v", err)
	}
}

func patch(b []byte, off int, v int32) []byte {
	c := append([]byte{}, b...)
	binary.LittleEndian.PutUint32(c[off:], uint32(v))
	return c
}

func TestHtokRoundTrip(t *testing.T) {
	tok := &Tokenizer{Tokens: []string{"a", "b", "ab", "Ġthe", ""}, Merges: [][3]uint32{{0, 1, 2}}, BOS: 3, EOS: 4}
	var buf bytes.Buffer
	if _, err := tok.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	// Hand-check the header and first token.
	b := buf.Bytes()
	if string(b[:4]) != "HTOK" || binary.LittleEndian.Uint32(b[4:]) != 5 || binary.LittleEndian.Uint32(b[8:]) != 1 ||
		binary.LittleEndian.Uint32(b[12:]) != 3 || binary.LittleEndian.Uint32(b[16:]) != 4 || !bytes.Equal(b[20:23], []byte{1, 0, 'a'}) {
		t.Fatalf("header bytes %x", b[:23])
	}
	if len(b) != 20+3+3+4+2+len("Ġthe")+2+12 {
		t.Fatalf("length %d", len(b))
	}
	got, err := DecodeTokenizer(b, "x.htok")
	must(t, err)
	if !reflect.DeepEqual(got, tok) {
		t.Fatalf("round trip %+v", got)
	}
	if _, err := DecodeTokenizer(b[:len(b)-1], "x.htok"); err == nil || !strings.Contains(err.Error(), "x.htok: byte") {
		t.Errorf("truncated htok: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenSurvivesCorruption: any header byte changed or any truncation
// gives an error or a file whose every region can be read; never a panic.
func TestOpenSurvivesCorruption(t *testing.T) {
	h := testHeader(3)
	_, end, err := Layout(h)
	must(t, err)
	body := make([]byte, end)
	copy(body, h.Encode())
	p := filepath.Join(t.TempDir(), "c.h1b")
	for i := 0; i < 52; i++ {
		for _, v := range []byte{0xFF, 0x00, 0x80, 0x01} {
			c := append([]byte{}, body...)
			c[i] = v
			must(t, os.WriteFile(p, c, 0o644))
			if f, err := Open(p); err == nil {
				for _, ti := range f.Tensors {
					if _, err := f.Bytes(ti); err != nil {
						t.Fatal(err)
					}
					if ti.Kind == Packed {
						if _, err := f.Scales(ti); err != nil {
							t.Fatal(err)
						}
					}
				}
				f.Close()
			}
		}
		must(t, os.WriteFile(p, body[:i], 0o644))
		if _, err := Open(p); err == nil {
			t.Fatalf("truncated at %d accepted", i)
		}
	}
}
