package safetensors

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"
)

// fuzzSeeds are valid small files and the red-team headers.
func fuzzSeeds() [][]byte {
	var valid bytes.Buffer
	Write(&valid, map[string]string{"format": "pt"}, []Source{
		{Name: "w", DType: F16, Shape: []int64{2, 2}, WriteTo: FromBytes(make([]byte, 8))},
		{Name: "q", DType: F4, Shape: []int64{3}, WriteTo: FromBytes(make([]byte, 2))},
		{Name: "e", DType: F32, Shape: []int64{0, 4}, WriteTo: FromBytes(nil)},
	})
	var empty bytes.Buffer
	Write(&empty, nil, nil)
	return [][]byte{
		valid.Bytes(), empty.Bytes(),
		append(u64(1<<40), []byte("{}")...),
		rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,1099511627776]}}`, make([]byte, 4)),
		rawFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil),
		rawFile(`{"a":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}}`, nil),
		rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)),
		rawFile(`{"__metadata__":{"n":"1"},"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, make([]byte, 4)),
	}
}

// FuzzReadHeader: any input is accepted or refused with a FormatError,
// never a panic; an accepted file tiles its data section exactly, and
// writing its tensors back out gives a file that reads the same and
// rewrites to identical bytes.
func FuzzReadHeader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadHeader(bytes.NewReader(b), int64(len(b)), "fuzz")
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error %T is not a FormatError: %v", err, err)
			}
			return
		}
		var end int64
		for _, tn := range h.Tensors {
			want, ok := byteSize(tn)
			if !ok || tn.Begin != end || tn.Size() != want || tn.Elements() < 0 {
				t.Fatalf("accepted an inconsistent tensor %+v (previous end %d)", tn, end)
			}
			end = tn.End
		}
		if h.DataStart()+end != int64(len(b)) {
			t.Fatalf("data ends at %d in a %d-byte file", h.DataStart()+end, len(b))
		}
		once := rewrite(t, h, b)
		h2, err := ReadHeader(bytes.NewReader(once), int64(len(once)), "rewritten")
		if err != nil {
			t.Fatalf("our own output is refused: %v", err)
		}
		if len(h2.Tensors) != len(h.Tensors) || (len(h.Metadata) > 0 && !reflect.DeepEqual(h.Metadata, h2.Metadata)) {
			t.Fatalf("round trip changed the header: %+v vs %+v", h, h2)
		}
		for i := range h.Tensors {
			a, c := h.Tensors[i], h2.Tensors[i]
			if a.Name != c.Name || a.DType != c.DType || !reflect.DeepEqual(a.Shape, c.Shape) || a.Begin != c.Begin || a.End != c.End {
				t.Fatalf("tensor %d: %+v became %+v", i, a, c)
			}
		}
		if twice := rewrite(t, h2, once); !bytes.Equal(once, twice) {
			t.Fatal("rewriting is not stable")
		}
	})
}

func rewrite(t *testing.T, h *Header, b []byte) []byte {
	srcs := make([]Source, len(h.Tensors))
	for i, tn := range h.Tensors {
		data := b[h.DataStart()+tn.Begin : h.DataStart()+tn.End]
		srcs[i] = Source{Name: tn.Name, DType: tn.DType, Shape: tn.Shape, WriteTo: FromBytes(data)}
	}
	var out bytes.Buffer
	if err := Write(&out, h.Metadata, srcs); err != nil {
		t.Fatalf("writing an accepted file back: %v", err)
	}
	return out.Bytes()
}

// FuzzIndex: model.safetensors.index.json parses or fails cleanly; an
// accepted index names only shard files inside the model directory.
func FuzzIndex(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{"total_size":2},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`,
		`{"weight_map":{"a":"../../fifo"}}`, `{"weight_map":{"a":"/etc/passwd"}}`, `{"weight_map":{"a":""}}`,
		`{"metadata":{"total_size":1e400},"weight_map":{}}`, `null`, `{"weight_map":{"a":"sub/../x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := parseIndex(b, "/m/"+IndexName)
		if err != nil {
			return
		}
		_ = ix.TotalSize()
		for tensor, shard := range ix.WeightMap {
			if !filepathIsLocal(shard) {
				t.Fatalf("accepted weight_map[%q] = %q", tensor, shard)
			}
		}
		if _, err := ix.Marshal(); err != nil {
			t.Fatalf("marshal an accepted index: %v", err)
		}
	})
}

func filepathIsLocal(p string) bool { return filepath.IsLocal(filepath.FromSlash(p)) }
