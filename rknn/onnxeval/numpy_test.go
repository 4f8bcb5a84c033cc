package onnxeval_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/internal/testmodel"
	"github.com/edgectl/edgectl/rknn/onnxeval"
)

// numpyEval is an independent interpreter: python3-onnx reads the model
// and numpy computes each node in float64.
const numpyEval = `
import sys, onnx, numpy as np
from onnx import numpy_helper, helper
from math import erf
m = onnx.load(sys.argv[1])
def arr(t):
    a = numpy_helper.to_array(t)
    return a.astype(np.float64) if a.dtype.kind == "f" else a
v = {t.name: arr(t) for t in m.graph.initializer}
shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
v[m.graph.input[0].name] = np.fromfile(sys.argv[2], dtype="<f8").reshape(shape)
verf = np.vectorize(erf)
for n in m.graph.node:
    a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
    i = [v[k] for k in n.input]
    op = n.op_type
    if op == "Constant": r = arr(a["value"])
    elif op == "Add": r = i[0] + i[1]
    elif op == "Sub": r = i[0] - i[1]
    elif op == "Mul": r = i[0] * i[1]
    elif op == "Div": r = i[0] / i[1]
    elif op == "Pow": r = np.power(i[0], i[1])
    elif op == "Sqrt": r = np.sqrt(i[0])
    elif op == "Erf": r = verf(i[0])
    elif op == "MatMul": r = np.matmul(i[0], i[1])
    elif op == "ReduceMean": r = i[0].mean(axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1)))
    elif op == "Softmax":
        e = np.exp(i[0] - i[0].max(axis=a["axis"], keepdims=True)); r = e / e.sum(axis=a["axis"], keepdims=True)
    elif op == "Reshape": r = i[0].reshape(tuple(int(d) for d in i[1]))
    elif op == "Transpose": r = i[0].transpose(a["perm"])
    elif op == "Shape": r = np.array(i[0].shape, dtype=np.int64)
    elif op == "Gather": r = np.take(i[0], i[1], axis=a.get("axis", 0))
    elif op == "Unsqueeze": r = np.expand_dims(i[0], tuple(a["axes"]))
    elif op == "Concat": r = np.concatenate(i, axis=a["axis"])
    else: raise SystemExit("no numpy rule for " + op)
    v[n.output[0]] = r
np.asarray(v[m.graph.output[0].name], dtype="<f8").tofile(sys.argv[3])
`

// TestMatchesNumpy evaluates the generated SigLIP-shaped encoder with the
// Go evaluator and with numpy (through python3-onnx's reader): float64
// results agree to rounding.
func TestMatchesNumpy(t *testing.T) {
	py := testmodel.PythonONNX()
	if py == "" {
		t.Skip(testmodel.PythonONNXHint)
	}
	dir := t.TempDir()
	m := testmodel.ViT(testmodel.ViTSpec{Tokens: 32, Hidden: 48, Heads: 3, Layers: 2, Seed: 5})
	mp := filepath.Join(dir, "vit.onnx")
	if err := onnx.WriteFile(mp, m, onnx.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := onnxeval.New([]int{1, 32, 48}, nil)
	in := make([]byte, 8*len(x.Data))
	for i := range x.Data {
		x.Data[i] = rng.NormFloat64()
		binary.LittleEndian.PutUint64(in[8*i:], math.Float64bits(x.Data[i]))
	}
	os.WriteFile(filepath.Join(dir, "x.bin"), in, 0o644)
	if out, err := exec.Command(py, "-c", numpyEval, mp, filepath.Join(dir, "x.bin"), filepath.Join(dir, "y.bin")).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "y.bin"))
	res, err := onnxeval.Run(context.Background(), m, map[string]*onnxeval.Tensor{"patch_embeds": x}, onnxeval.Options{Keep: func(string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	got := res["last_hidden_state"].Data
	if len(raw) != 8*len(got) {
		t.Fatalf("numpy wrote %d bytes, want %d", len(raw), 8*len(got))
	}
	worst := 0.0
	for i, g := range got {
		w := math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		worst = max(worst, math.Abs(g-w))
	}
	if worst > 1e-9 {
		t.Fatalf("Go and numpy differ by up to %g", worst)
	}
	t.Logf("Go and numpy agree to %g", worst)
}
