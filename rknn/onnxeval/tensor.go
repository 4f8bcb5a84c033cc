// Package onnxeval is a pure-Go reference evaluator for the ONNX operators
// a torch.onnx (opset 12) vision transformer uses. It computes in float64;
// with Options.FP16 every float tensor is rounded to IEEE half precision
// after each operator (overflow becomes ±Inf), which is how an NPU that
// stores activations in FP16 sees the graph. It is a checker, not a
// runtime: clarity over speed.
package onnxeval

import (
	"fmt"
	"math"
	"slices"
)

// Tensor is a value: shape and row-major data. Int marks integer tensors
// (shapes, indices), which FP16 mode leaves alone.
type Tensor struct {
	Shape []int
	Data  []float64
	Int   bool
}

// New makes a float tensor of shape with data (zeros when nil).
func New(shape []int, data []float64) *Tensor {
	if data == nil {
		data = make([]float64, numel(shape))
	}
	return &Tensor{Shape: slices.Clone(shape), Data: data}
}

// Bytes16 is the tensor's size stored in FP16.
func (t *Tensor) Bytes16() int { return 2 * len(t.Data) }

// MaxAbs is the largest |x| (Inf when any value is not finite).
func (t *Tensor) MaxAbs() float64 {
	m := 0.0
	for _, v := range t.Data {
		if math.IsNaN(v) {
			return math.Inf(1)
		}
		m = max(m, math.Abs(v))
	}
	return m
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func strides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// MaxElements bounds any one tensor the evaluator makes (1 GiB of
// float64): a hostile model's shapes fail instead of exhausting memory.
const MaxElements = 1 << 27

// checkSize refuses a shape over MaxElements (or with a negative dim).
func checkSize(shape []int) error {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in %v", shape)
		}
		if d > 0 && n > MaxElements/d {
			return fmt.Errorf("a tensor of shape %v is over the evaluator's %d-element limit", shape, MaxElements)
		}
		n *= d
	}
	return nil
}

// broadcastShape is numpy's broadcast of two shapes.
func broadcastShape(a, b []int) ([]int, error) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := 0; i < n; i++ {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, fmt.Errorf("shapes %v and %v do not broadcast", a, b)
		}
	}
	return out, checkSize(out)
}

// broadcastIndex maps each flat index of out to a flat index of in
// (broadcast dims repeat).
func broadcastIndex(in, out []int) []int {
	st := strides(in)
	bs := make([]int, len(out)) // stride of in along each out dim, 0 where broadcast
	for i := range out {
		j := len(in) - len(out) + i
		if j >= 0 && in[j] != 1 {
			bs[i] = st[j]
		}
	}
	idx := make([]int, numel(out))
	pos := make([]int, len(out))
	flat := 0
	for k := range idx {
		idx[k] = flat
		for d := len(out) - 1; d >= 0; d-- {
			pos[d]++
			flat += bs[d]
			if pos[d] < out[d] {
				break
			}
			flat -= bs[d] * pos[d]
			pos[d] = 0
		}
	}
	return idx
}

// binary applies f elementwise with broadcasting.
func binary(a, b *Tensor, f func(x, y float64) float64) (*Tensor, error) {
	shape, err := broadcastShape(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	out := &Tensor{Shape: shape, Data: make([]float64, numel(shape)), Int: a.Int && b.Int}
	if slices.Equal(a.Shape, shape) && slices.Equal(b.Shape, shape) {
		for i := range out.Data {
			out.Data[i] = f(a.Data[i], b.Data[i])
		}
		return out, nil
	}
	ia, ib := broadcastIndex(a.Shape, shape), broadcastIndex(b.Shape, shape)
	for i := range out.Data {
		out.Data[i] = f(a.Data[ia[i]], b.Data[ib[i]])
	}
	return out, nil
}

func unary(a *Tensor, f func(float64) float64) *Tensor {
	out := &Tensor{Shape: slices.Clone(a.Shape), Data: make([]float64, len(a.Data))}
	for i, v := range a.Data {
		out.Data[i] = f(v)
	}
	return out
}

// RoundF16 rounds x to the nearest IEEE binary16 value (ties to even),
// ±Inf beyond 65504 as hardware storing FP16 overflows, NaN kept. It is
// direct from float64, without the double rounding through float32.
func RoundF16(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	_, e := math.Frexp(x) // |x| in [2^(e-1), 2^e)
	exp := e - 1
	if exp < -14 {
		exp = -14 // subnormals: fixed spacing 2^-24
	}
	ulp := math.Ldexp(1, exp-10)
	r := math.RoundToEven(x/ulp) * ulp
	if math.Abs(r) > 65504 {
		return math.Copysign(math.Inf(1), x)
	}
	return r
}

// roundF16 rounds a float tensor in place.
func (t *Tensor) roundF16() {
	if t.Int {
		return
	}
	for i, v := range t.Data {
		t.Data[i] = RoundF16(v)
	}
}

// Cosine is the cosine similarity of two equally long vectors (0 when
// either is zero or holds a non-finite value).
func Cosine(a, b []float64) float64 {
	if len(a) != len(b) {
		return 0
	}
	var ab, aa, bb float64
	for i := range a {
		ab += a[i] * b[i]
		aa += a[i] * a[i]
		bb += b[i] * b[i]
	}
	c := ab / math.Sqrt(aa*bb)
	if math.IsNaN(c) || math.IsInf(c, 0) {
		return 0
	}
	return c
}
