package onnx_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/internal/testmodel"
)

func encode(t testing.TB, m *onnx.Model) []byte {
	t.Helper()
	e, err := onnx.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return e.Bytes()
}

func smallViT() *onnx.Model {
	return testmodel.ViT(testmodel.ViTSpec{Tokens: 16, Hidden: 24, Heads: 2, Layers: 1, Seed: 1})
}

// TestRoundTripGenerated: decode → encode reproduces a generated encoder
// byte for byte, and initializer data is a view of the input, not a copy.
func TestRoundTripGenerated(t *testing.T) {
	for _, m := range []*onnx.Model{smallViT(), testmodel.ViT(testmodel.SigLIPSpec())} {
		b := encode(t, m)
		d, err := onnx.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := encode(t, d); !bytes.Equal(got, b) {
			t.Fatalf("round trip differs: %d bytes in, %d out", len(b), len(got))
		}
		if len(d.Graph.Node) != len(m.Graph.Node) || len(d.Graph.Initializer) != len(m.Graph.Initializer) {
			t.Fatalf("decoded %d nodes, %d initializers; wrote %d, %d", len(d.Graph.Node), len(d.Graph.Initializer), len(m.Graph.Node), len(m.Graph.Initializer))
		}
		raw := d.Graph.Initializer[0].RawData
		if len(raw) == 0 || !aliases(b, raw) {
			t.Fatalf("initializer %q data is not a view of the input", d.Graph.Initializer[0].Name)
		}
	}
}

func aliases(buf, sub []byte) bool {
	if len(sub) == 0 {
		return false
	}
	start := &buf[0]
	end := &buf[len(buf)-1]
	p := &sub[0]
	return uintptr(unsafePointer(p)) >= uintptr(unsafePointer(start)) && uintptr(unsafePointer(p)) <= uintptr(unsafePointer(end))
}

// TestRoundTripKeepsUnknownFields: fields the reader does not decode
// (metadata_props, a future field in a node, a sparse initializer) come
// back in place.
func TestRoundTripKeepsUnknownFields(t *testing.T) {
	m := smallViT()
	// Splice raw fields onto the model's encoding.
	kv := protowire.AppendTag(nil, 1, protowire.BytesType)
	kv = protowire.AppendString(kv, "author")
	kv = protowire.AppendTag(kv, 2, protowire.BytesType)
	kv = protowire.AppendString(kv, "edgectl")
	meta := protowire.AppendTag(nil, 14, protowire.BytesType)
	meta = protowire.AppendBytes(meta, kv)
	future := protowire.AppendTag(nil, 99, protowire.VarintType)
	future = protowire.AppendVarint(future, 7)
	b := append(append(encode(t, m), meta...), future...)
	d, err := onnx.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, d); !bytes.Equal(got, b) {
		t.Fatalf("unknown fields were not kept: %d bytes in, %d out", len(b), len(got))
	}
	// Changing a decoded field keeps the unknown ones around it.
	d.ProducerName = "changed"
	got := encode(t, d)
	if !bytes.Contains(got, meta) || !bytes.HasSuffix(got, future) {
		t.Fatal("unknown fields lost after an edit")
	}
}

// TestRoundTripPythonOnnx checks the writer against protobuf's own
// serializer through Debian's python3-onnx: a model python writes comes
// back byte-exact through Decode/Encode, and python re-serializes what Go
// writes to the same bytes (so Go writes the canonical form).
func TestRoundTripPythonOnnx(t *testing.T) {
	py := testmodel.PythonONNX()
	if py == "" {
		t.Skip(testmodel.PythonONNXHint)
	}
	dir := t.TempDir()
	pyModel := filepath.Join(dir, "py.onnx")
	script := `
import sys, onnx
from onnx import helper, TensorProto, numpy_helper
import numpy as np
n1 = helper.make_node("Gather", ["x", "idx"], ["g"], name="gather", axis=0, doc_string="d")
n2 = helper.make_node("Softmax", ["g"], ["y"], axis=-1)
n3 = helper.make_node("ReduceMean", ["y"], ["z"], axes=[-1], keepdims=0)
n4 = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", TensorProto.FLOAT, [2], [0.5, -2.0]))
n5 = helper.make_node("LeakyRelu", ["z"], ["w"], alpha=0.0)
idx = helper.make_tensor("idx", TensorProto.INT64, [1], [0])
w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
g = helper.make_graph([n1, n2, n3, n4, n5], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
    [helper.make_tensor_value_info("w", TensorProto.FLOAT, [None])], [idx, w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)], producer_name="py")
helper.set_model_props(m, {"k": "v"})
onnx.save(m, sys.argv[1])
`
	if out, err := exec.Command(py, "-c", script, pyModel).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	want, err := os.ReadFile(pyModel)
	if err != nil {
		t.Fatal(err)
	}
	f, err := onnx.Open(pyModel)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := encode(t, f.Model); !bytes.Equal(got, want) {
		t.Fatalf("python's model does not round-trip: %d bytes in, %d out", len(want), len(got))
	}
	if a := f.Graph.Node[0].Attr("axis"); a == nil || a.Type != onnx.AttrInt || a.I != 0 {
		t.Fatalf("axis=0 attribute decoded as %+v", a)
	}
	// Python re-serializes Go's encoding of the generated encoder unchanged.
	goModel := filepath.Join(dir, "go.onnx")
	if err := onnx.WriteFile(goModel, smallViT(), onnx.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	check := `import sys, onnx
b = open(sys.argv[1], "rb").read()
m = onnx.load_from_string(b)
assert m.SerializeToString() == b, "python serializes Go's model differently"
onnx.checker.check_model(m, full_check=True)
print(len(m.graph.node))`
	out, err := exec.Command(py, "-c", check, goModel).CombinedOutput()
	if err != nil {
		t.Fatalf("python on Go's model: %v\n%s", err, out)
	}
	if strings.TrimSpace(string(out)) == "0" {
		t.Fatal("python read no nodes")
	}
}
