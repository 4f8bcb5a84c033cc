package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ref "github.com/nlpodyssey/safetensors"
)

func u64(v uint64) []byte { b := make([]byte, 8); binary.LittleEndian.PutUint64(b, v); return b }

// rawFile assembles a file from a literal header and data bytes.
func rawFile(header string, data []byte) []byte {
	return append(append(u64(uint64(len(header))), header...), data...)
}

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteIsReadByIndependentReader(t *testing.T) {
	a := []float32{1, -2.5, 3.25, 0}
	ab := make([]byte, 8)
	if err := EncodeFloat32(ab, F16, a); err != nil {
		t.Fatal(err)
	}
	srcs := []Source{
		{Name: "w.f16", DType: F16, Shape: []int64{2, 2}, WriteTo: FromBytes(ab)},
		{Name: "b.u8", DType: U8, Shape: []int64{3}, WriteTo: FromBytes([]byte{7, 8, 9})},
		{Name: "empty", DType: F32, Shape: []int64{0, 4}, WriteTo: FromBytes(nil)},
	}
	var buf bytes.Buffer
	if err := Write(&buf, map[string]string{"format": "pt"}, srcs); err != nil {
		t.Fatal(err)
	}
	if hl := binary.LittleEndian.Uint64(buf.Bytes()); hl%8 != 0 {
		t.Fatalf("header length %d is not 8-aligned", hl)
	}
	st, err := ref.Deserialize(buf.Bytes())
	if err != nil {
		t.Fatalf("nlpodyssey/safetensors rejects our file: %v", err)
	}
	v, ok := st.Tensor("w.f16")
	if !ok || !bytes.Equal(v.Data(), ab) || v.DType() != ref.F16 {
		t.Fatalf("independent reader sees %v %v", ok, v.Data())
	}
	// And our reader agrees.
	f, err := Open(writeTemp(t, "m.safetensors", buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw, _ := f.Tensor("w.f16")
	got, err := f.Float32(tw)
	if err != nil || len(got) != 4 || got[1] != -2.5 || got[2] != 3.25 {
		t.Fatalf("float32 view %v %v", got, err)
	}
	tb, _ := f.Tensor("b.u8")
	b, _ := f.Bytes(tb)
	if !bytes.Equal(b, []byte{7, 8, 9}) || f.Metadata["format"] != "pt" {
		t.Fatalf("bytes %v meta %v", b, f.Metadata)
	}
}

func TestEmptyFileMatchesReference(t *testing.T) {
	// The reference writer's empty file: length 8, "{}" + six spaces.
	var buf bytes.Buffer
	if err := Write(&buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := append(u64(8), []byte("{}      ")...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("empty file % x, want % x", buf.Bytes(), want)
	}
}

func TestValidationFaults(t *testing.T) {
	okData := make([]byte, 8)
	cases := []struct {
		name string
		file []byte
		want string // substring of the error
	}{
		{"too short", []byte{1, 2, 3}, "shorter than the 8-byte header length"},
		{"header past EOF", append(u64(1000), []byte(`{}`)...), "runs past the end of the file"},
		{"header too large", append(u64(MaxHeaderSize+1), make([]byte, 16)...), "exceeds"},
		{"not utf8", rawFile("{\"a\xff\": 1}", nil), "not valid UTF-8"},
		{"not json", rawFile(`{"a": `, nil), "not valid JSON"},
		{"not an object", rawFile(`[1, 2]  `, nil), "not a JSON object"},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, okData), "overlaps"},
		{"gap", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, make([]byte, 12)), "gap"},
		{"size mismatch", rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, okData), "needs 12 bytes"},
		{"truncated data", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, okData[:5]), "file ends at byte"},
		{"trailing bytes", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, okData), "bytes after the last tensor"},
		{"duplicate", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, okData), "appears twice"},
		{"unknown dtype", rawFile(`{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}}`, okData[:4]), `unknown dtype "Q4"`},
		{"bad metadata", rawFile(`{"__metadata__":{"n":1}}`, nil), "must be strings"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, "bad.safetensors", c.file)
			_, err := Open(p)
			if err == nil {
				t.Fatal("accepted")
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a FormatError", err, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || !strings.HasPrefix(msg, p+": ") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line starting with the path and containing %q", msg, c.want)
			}
		})
	}
}

func TestFaultOffsetsPointAtTheTensor(t *testing.T) {
	hdr := `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`
	_, err := ReadHeader(bytes.NewReader(rawFile(hdr, make([]byte, 8))), int64(8+len(hdr)+8), "x")
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Tensor != "b" || fe.Offset != int64(8+len(hdr)+2) {
		t.Fatalf("got %+v", fe)
	}
}

func TestScalarAndSubByteDTypes(t *testing.T) {
	hdr := `{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"q":{"dtype":"F4","shape":[3],"data_offsets":[4,6]},"e":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[6,8]}}`
	f, err := Open(writeTemp(t, "x.safetensors", rawFile(hdr, make([]byte, 8))))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s, _ := f.Tensor("s"); s.Elements() != 1 || len(s.Shape) != 0 {
		t.Fatalf("scalar %+v", s)
	}
}

func TestCheckpointIndexMustAgree(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	Write(&buf, nil, []Source{{Name: "a", DType: U8, Shape: []int64{1}, WriteTo: FromBytes([]byte{1})}})
	os.WriteFile(filepath.Join(dir, "model-00001-of-00001.safetensors"), buf.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, IndexName), []byte(`{"metadata":{"total_size":1},"weight_map":{"a":"model-00001-of-00001.safetensors","ghost":"model-00001-of-00001.safetensors"}}`), 0o644)
	if _, err := OpenCheckpoint(dir); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Fatalf("index naming a missing tensor: %v", err)
	}
	os.WriteFile(filepath.Join(dir, IndexName), []byte(`{"metadata":{"total_size":1},"weight_map":{"a":"model-00001-of-00001.safetensors"}}`), 0o644)
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if ck.TensorBytes() != 1 || ck.Index.TotalSize() != 1 {
		t.Fatalf("sizes %d %d", ck.TensorBytes(), ck.Index.TotalSize())
	}
	if _, err := OpenCheckpoint(t.TempDir()); !errors.Is(err, ErrNoWeights) {
		t.Fatalf("empty dir: %v", err)
	}
}
