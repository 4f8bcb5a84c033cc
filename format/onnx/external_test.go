package onnx_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/internal/mmapfile"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// TestExternalData: WriteFile moves large initializers into a data file
// beside the model (location/offset/length, 64-byte aligned); Open maps
// them back with the same values; writing without ExternalData inlines
// them again, giving the plain model's bytes.
func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	m := smallViT()
	path := filepath.Join(dir, "model.onnx")
	if err := onnx.WriteFile(path, m, onnx.WriteOptions{ExternalData: "model.onnx.data", ExternalMin: 512}); err != nil {
		t.Fatal(err)
	}
	f, err := onnx.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	external := 0
	for i, tn := range f.Graph.Initializer {
		want, err := m.Graph.Initializer[i].Float64s()
		if err != nil {
			t.Fatal(err)
		}
		got, err := tn.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Fatalf("tensor %s differs after the external round trip", tn.Name)
		}
		if loc, off, n, ok := tn.ExternalRef(); ok {
			external++
			if loc != "model.onnx.data" || off%64 != 0 || n != int64(4*len(want)) {
				t.Fatalf("tensor %s: external ref %s %d %d", tn.Name, loc, off, n)
			}
		} else if len(want)*4 >= 512 {
			t.Fatalf("tensor %s (%d bytes) was not moved out", tn.Name, len(want)*4)
		}
	}
	if external == 0 {
		t.Fatal("no tensor went to external data")
	}
	// The model file itself decodes and re-encodes byte-exactly.
	b, _ := os.ReadFile(path)
	d, err := onnx.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encode(t, d), b) {
		t.Fatal("a model with external data does not round-trip")
	}
	inline := filepath.Join(dir, "inline.onnx")
	if err := onnx.WriteFile(inline, f.Model, onnx.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(inline)
	if !bytes.Equal(got, encode(t, m)) {
		t.Fatal("inlining the external data does not give back the original model")
	}
	if py := testmodel.PythonONNX(); py != "" {
		out, err := exec.Command(py, "-c", `import sys, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
print(float(numpy_helper.to_array(m.graph.initializer[0]).ravel()[-1]))`, path).CombinedOutput()
		if err != nil {
			t.Fatalf("python3-onnx cannot load the external data: %v\n%s", err, out)
		}
		want, _ := m.Graph.Initializer[0].Float64s()
		got, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil || got != want[len(want)-1] {
			t.Fatalf("python reads %s, want %v", out, want[len(want)-1])
		}
	}
}

// TestExternalDataOutsideRefused: a location leaving the model directory,
// or a range past the data file, is an error naming the tensor.
func TestExternalDataOutsideRefused(t *testing.T) {
	dir := t.TempDir()
	m := &onnx.Model{IRVersion: 7, OpsetImport: []onnx.OpsetID{{Version: 12}}, Graph: &onnx.Graph{Name: "g"}}
	os.WriteFile(filepath.Join(dir, "w.bin"), make([]byte, 16), 0o644)
	for _, c := range []struct{ loc, off, n, want string }{
		{"../w.bin", "0", "16", "not a path inside"},
		{"w.bin", "8", "16", "lies outside"},
		{"missing.bin", "0", "4", "no such file"},
	} {
		tn := &onnx.Tensor{Name: "w", Dims: []int64{4}, DataType: onnx.Float, DataLocation: onnx.LocationExternal,
			External: []onnx.KeyValue{{Key: "location", Value: c.loc}, {Key: "offset", Value: c.off}, {Key: "length", Value: c.n}}}
		m.Graph.Initializer = []*onnx.Tensor{tn}
		p := filepath.Join(dir, "m.onnx")
		os.WriteFile(p, encode(t, m), 0o644)
		f, err := onnx.Open(p)
		if err == nil {
			f.Close()
			t.Fatalf("%s: opened", c.loc)
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"w"`) {
			t.Errorf("%s: %v (want %q and the tensor name)", c.loc, err, c.want)
		}
	}
}

// TestOver2GBNeedsExternalData: a tensor whose data pushes the model past
// protobuf's 2 GB limit (a sparse file, mapped: no memory is used) cannot
// be encoded inline, and the error says to use external data.
func TestOver2GBNeedsExternalData(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.bin")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	const size = onnx.MaxProtoSize + 1
	if err := f.Truncate(size); err != nil {
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	mf, err := mmapfile.Open(p, "a test file")
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	raw, err := mf.Slice(0, size)
	if err != nil {
		t.Skip("cannot map 2 GB here:", err)
	}
	m := smallViT()
	m.Graph.Initializer = append(m.Graph.Initializer, &onnx.Tensor{Name: "huge", Dims: []int64{size}, DataType: onnx.Uint8, RawData: raw})
	if _, err := onnx.Encode(m); err == nil || !strings.Contains(err.Error(), "external data") {
		t.Fatalf("encoding a > 2 GB model: %v", err)
	}
}
