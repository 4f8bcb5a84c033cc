package onnxeval

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/x448/float16"

	"github.com/edgectl/edgectl/format/onnx"
)

func node(op string, in []string, attrs ...*onnx.Attribute) *onnx.Node {
	return &onnx.Node{OpType: op, Name: op, Input: in, Output: []string{"y"}, Attribute: attrs}
}

func tensor(shape []int, data ...float64) *Tensor { return &Tensor{Shape: shape, Data: data} }

func intTensor(data ...float64) *Tensor {
	return &Tensor{Shape: []int{len(data)}, Data: data, Int: true}
}

// TestOps checks each operator on small inputs against values worked out
// by hand (numpy semantics).
func TestOps(t *testing.T) {
	a := tensor([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	cases := []struct {
		name  string
		n     *onnx.Node
		args  []*Tensor
		opset int64
		shape []int
		want  []float64
	}{
		{"add broadcast", node("Add", nil), []*Tensor{a, tensor([]int{3}, 10, 20, 30)}, 12, []int{2, 3}, []float64{11, 22, 33, 14, 25, 36}},
		{"sub column", node("Sub", nil), []*Tensor{a, tensor([]int{2, 1}, 1, 4)}, 12, []int{2, 3}, []float64{0, 1, 2, 0, 1, 2}},
		{"div", node("Div", nil), []*Tensor{a, tensor(nil, 2)}, 12, []int{2, 3}, []float64{0.5, 1, 1.5, 2, 2.5, 3}},
		{"pow", node("Pow", nil), []*Tensor{a, tensor(nil, 2)}, 12, []int{2, 3}, []float64{1, 4, 9, 16, 25, 36}},
		{"matmul", node("MatMul", nil), []*Tensor{a, tensor([]int{3, 2}, 1, 0, 0, 1, 1, 1)}, 12, []int{2, 2}, []float64{4, 5, 10, 11}},
		{"matmul batch broadcast", node("MatMul", nil), []*Tensor{tensor([]int{2, 1, 2}, 1, 2, 3, 4), tensor([]int{2, 1}, 1, 1)}, 12, []int{2, 1, 1}, []float64{3, 7}},
		{"gemm transB", node("Gemm", nil, onnx.IntAttr("transB", 1), onnx.FloatAttr("alpha", 2)),
			[]*Tensor{tensor([]int{1, 2}, 1, 2), tensor([]int{2, 2}, 1, 0, 0, 1), tensor([]int{2}, 1, 1)}, 12, []int{1, 2}, []float64{3, 5}},
		{"reducemean last keep", node("ReduceMean", nil, onnx.IntsAttr("axes", -1)), []*Tensor{a}, 12, []int{2, 1}, []float64{2, 5}},
		{"reducemean first drop", node("ReduceMean", nil, onnx.IntsAttr("axes", 0), onnx.IntAttr("keepdims", 0)), []*Tensor{a}, 12, []int{3}, []float64{2.5, 3.5, 4.5}},
		{"softmax axis 1 opset 12 (2-D)", node("Softmax", nil), []*Tensor{tensor([]int{1, 2}, 0, math.Log(3))}, 12, []int{1, 2}, []float64{0.25, 0.75}},
		{"softmax opset 12 coerces", node("Softmax", nil, onnx.IntAttr("axis", 1)), []*Tensor{tensor([]int{1, 2, 2}, 0, 0, 0, 0)}, 12, []int{1, 2, 2}, []float64{0.25, 0.25, 0.25, 0.25}},
		{"softmax opset 13 per axis", node("Softmax", nil, onnx.IntAttr("axis", 1)), []*Tensor{tensor([]int{1, 2, 2}, 0, 0, 0, 0)}, 13, []int{1, 2, 2}, []float64{0.5, 0.5, 0.5, 0.5}},
		{"reshape 0 and -1", node("Reshape", nil), []*Tensor{a, intTensor(0, -1)}, 12, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"reshape flat", node("Reshape", nil), []*Tensor{a, intTensor(3, 2)}, 12, []int{3, 2}, []float64{1, 2, 3, 4, 5, 6}},
		{"transpose", node("Transpose", nil, onnx.IntsAttr("perm", 1, 0)), []*Tensor{a}, 12, []int{3, 2}, []float64{1, 4, 2, 5, 3, 6}},
		{"slice axes", node("Slice", nil), []*Tensor{a, intTensor(1), intTensor(3), intTensor(1)}, 12, []int{2, 2}, []float64{2, 3, 5, 6}},
		{"slice negative step", node("Slice", nil), []*Tensor{a, intTensor(-1), intTensor(-1000), intTensor(1), intTensor(-2)}, 12, []int{2, 2}, []float64{3, 1, 6, 4}},
		{"slice clamps", node("Slice", nil), []*Tensor{a, intTensor(0, 2), intTensor(1, 100)}, 12, []int{1, 1}, []float64{3}},
		{"concat axis 1", node("Concat", nil, onnx.IntAttr("axis", 1)), []*Tensor{a, tensor([]int{2, 1}, 7, 8)}, 12, []int{2, 4}, []float64{1, 2, 3, 7, 4, 5, 6, 8}},
		{"gather axis 1", node("Gather", nil, onnx.IntAttr("axis", 1)), []*Tensor{a, intTensor(2, -3)}, 12, []int{2, 2}, []float64{3, 1, 6, 4}},
		{"gather scalar", node("Gather", nil), []*Tensor{intTensor(4, 5, 6), {Shape: []int{}, Data: []float64{1}, Int: true}}, 12, []int{}, []float64{5}},
		{"shape", node("Shape", nil), []*Tensor{a}, 12, []int{2}, []float64{2, 3}},
		{"unsqueeze attr", node("Unsqueeze", nil, onnx.IntsAttr("axes", 0, 3)), []*Tensor{a}, 12, []int{1, 2, 3, 1}, []float64{1, 2, 3, 4, 5, 6}},
		{"unsqueeze input (opset 13)", node("Unsqueeze", nil), []*Tensor{a, intTensor(-1)}, 13, []int{2, 3, 1}, []float64{1, 2, 3, 4, 5, 6}},
		{"erf", node("Erf", nil), []*Tensor{tensor([]int{2}, 0, 1)}, 12, []int{2}, []float64{0, 0.8427007929497149}},
		{"sigmoid", node("Sigmoid", nil), []*Tensor{tensor([]int{1}, 0)}, 12, []int{1}, []float64{0.5}},
		{"sqrt", node("Sqrt", nil), []*Tensor{tensor([]int{2}, 4, 9)}, 12, []int{2}, []float64{2, 3}},
		{"cast to int64 truncates", node("Cast", nil, onnx.IntAttr("to", int64(onnx.Int64))), []*Tensor{tensor([]int{2}, 1.7, -1.7)}, 12, []int{2}, []float64{1, -1}},
		{"cast to float16 rounds", node("Cast", nil, onnx.IntAttr("to", int64(onnx.Float16))), []*Tensor{tensor([]int{1}, 1.0001)}, 12, []int{1}, []float64{1}},
		{"constant", node("Constant", nil, onnx.TensorAttr("value", onnx.FloatTensor("", []int64{2}, []float64{1.5, -2}))), nil, 12, []int{2}, []float64{1.5, -2}},
	}
	for _, c := range cases {
		out, err := apply(c.n, c.args, c.opset)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := out[0]
		if !slices.Equal(got.Shape, c.shape) {
			t.Errorf("%s: shape %v, want %v", c.name, got.Shape, c.shape)
			continue
		}
		for i := range c.want {
			if math.Abs(got.Data[i]-c.want[i]) > 1e-12 {
				t.Errorf("%s: %v, want %v", c.name, got.Data, c.want)
				break
			}
		}
	}
}

// TestOpErrors: bad shapes and unknown operators fail, naming the problem.
func TestOpErrors(t *testing.T) {
	a := tensor([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	for _, c := range []struct {
		n    *onnx.Node
		args []*Tensor
	}{
		{node("MatMul", nil), []*Tensor{a, a}},
		{node("Add", nil), []*Tensor{a, tensor([]int{2}, 1, 2)}},
		{node("Reshape", nil), []*Tensor{a, intTensor(4, -1)}},
		{node("Gather", nil), []*Tensor{a, intTensor(5)}},
		{node("Conv", nil), []*Tensor{a}},
		{node("Softmax", nil, onnx.IntAttr("axis", 5)), []*Tensor{a}},
	} {
		if _, err := apply(c.n, c.args, 12); err == nil {
			t.Errorf("%s accepted", c.n.OpType)
		}
	}
}

// TestRoundF16 agrees with the float32 → half conversion wherever the
// value is a float32 (no double rounding to disagree about), and
// overflows to Inf past 65504 as FP16 storage does.
func TestRoundF16(t *testing.T) {
	for _, v := range []float64{0.1, -0.1, 1.0009765625, 3.14159, 65504, 65519, 1e-7, 6e-8, 2.9e-8, -300.3, 1234.5678, 0.000123} {
		want := float64(float16.Fromfloat32(float32(v)).Float32())
		if got := RoundF16(float64(float32(v))); got != want {
			t.Errorf("RoundF16(%v) = %v, want %v", v, got, want)
		}
	}
	for _, v := range []float64{65520, 160000, -1e6} {
		if got := RoundF16(v); !math.IsInf(got, 0) || math.Signbit(got) != (v < 0) {
			t.Errorf("RoundF16(%v) = %v, want ±Inf", v, got)
		}
	}
}

// TestRunFreesAndKeeps: Run evaluates a graph in order, returns the graph
// outputs and the kept tensors, and names a node whose input is missing.
func TestRunFreesAndKeeps(t *testing.T) {
	g := &onnx.Graph{
		Node: []*onnx.Node{
			{OpType: "Mul", Name: "sq", Input: []string{"x", "x"}, Output: []string{"x2"}},
			{OpType: "ReduceMean", Name: "m", Input: []string{"x2"}, Output: []string{"y"}, Attribute: []*onnx.Attribute{onnx.IntsAttr("axes", -1)}},
		},
		Input:  []*onnx.ValueInfo{onnx.TensorValue("x", onnx.Float, []int64{1, 2})},
		Output: []*onnx.ValueInfo{onnx.TensorValue("y", onnx.Float, []int64{1, 1})},
	}
	m := &onnx.Model{OpsetImport: []onnx.OpsetID{{Version: 12}}, Graph: g}
	in := map[string]*Tensor{"x": tensor([]int{1, 2}, 300, 100)}
	res, err := Run(context.Background(), m, in, Options{Keep: func(n string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res["y"].Data[0] != 50000 {
		t.Fatalf("got %v", res)
	}
	// In FP16 storage 300² overflows: the NPU's failure.
	res, err = Run(context.Background(), m, in, Options{FP16: true})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(res["x2"].Data[0], 1) || !math.IsInf(res["y"].Data[0], 1) {
		t.Fatalf("fp16: x2 %v y %v, want +Inf", res["x2"].Data, res["y"].Data)
	}
	g.Node[0], g.Node[1] = g.Node[1], g.Node[0]
	if _, err := Run(context.Background(), m, in, Options{}); err == nil {
		t.Fatal("unsorted graph accepted")
	}
}

// TestHostileShapesBounded: shapes whose product would exhaust memory
// fail before anything is allocated.
func TestHostileShapesBounded(t *testing.T) {
	col := &Tensor{Shape: []int{1 << 16, 1}, Data: make([]float64, 1<<16)}
	row := &Tensor{Shape: []int{1, 1 << 16}, Data: make([]float64, 1<<16)}
	for _, c := range []struct {
		n    *onnx.Node
		args []*Tensor
	}{
		{node("Add", nil), []*Tensor{col, row}},
		{node("MatMul", nil), []*Tensor{col, row}},
		{node("Gather", nil), []*Tensor{row, {Shape: []int{1 << 16}, Data: make([]float64, 1<<16), Int: true}}},
		{node("Reshape", nil), []*Tensor{row, intTensor(1<<40, 0)}},
	} {
		if _, err := apply(c.n, c.args, 12); err == nil {
			t.Errorf("%s accepted a huge output", c.n.OpType)
		}
	}
}
