package onnxeval

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/edgectl/edgectl/format/onnx"
)

// Ops lists the operators the evaluator runs.
var Ops = []string{"Add", "Cast", "Concat", "Constant", "Div", "Erf", "Exp", "Gather", "Gemm", "Identity", "MatMul",
	"Mul", "Neg", "Pow", "ReduceMean", "Relu", "Reshape", "Shape", "Sigmoid", "Slice", "Softmax", "Sqrt", "Squeeze",
	"Sub", "Tanh", "Transpose", "Unsqueeze"}

func want(args []*Tensor, n int) error {
	if len(args) < n {
		return fmt.Errorf("needs %d inputs, has %d", n, len(args))
	}
	for i := 0; i < n; i++ {
		if args[i] == nil {
			return fmt.Errorf("input %d is missing", i)
		}
	}
	return nil
}

func one(t *Tensor, err error) ([]*Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*Tensor{t}, nil
}

func apply(n *onnx.Node, args []*Tensor, opset int64) ([]*Tensor, error) {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return nil, fmt.Errorf("domain %q is not supported (only the default ONNX domain)", n.Domain)
	}
	bin := map[string]func(x, y float64) float64{
		"Add": func(x, y float64) float64 { return x + y },
		"Sub": func(x, y float64) float64 { return x - y },
		"Mul": func(x, y float64) float64 { return x * y },
		"Div": func(x, y float64) float64 { return x / y },
		"Pow": pow,
	}
	un := map[string]func(float64) float64{
		"Sqrt": math.Sqrt, "Erf": math.Erf, "Exp": math.Exp, "Tanh": math.Tanh,
		"Neg":      func(x float64) float64 { return -x },
		"Relu":     func(x float64) float64 { return max(x, 0) },
		"Sigmoid":  func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
		"Identity": func(x float64) float64 { return x },
	}
	if f, ok := bin[n.OpType]; ok {
		if err := want(args, 2); err != nil {
			return nil, err
		}
		t, err := binary(args[0], args[1], f)
		if t != nil && n.OpType == "Div" && t.Int { // integer division truncates
			for i, v := range t.Data {
				t.Data[i] = math.Trunc(v)
			}
		}
		return one(t, err)
	}
	if f, ok := un[n.OpType]; ok {
		if err := want(args, 1); err != nil {
			return nil, err
		}
		t := unary(args[0], f)
		t.Int = n.OpType == "Identity" && args[0].Int
		return []*Tensor{t}, nil
	}
	switch n.OpType {
	case "Constant":
		return one(constant(n))
	case "MatMul":
		if err := want(args, 2); err != nil {
			return nil, err
		}
		return one(matmul(args[0], args[1]))
	case "Gemm":
		if err := want(args, 2); err != nil {
			return nil, err
		}
		return one(gemm(n, args))
	case "ReduceMean":
		if err := want(args, 1); err != nil {
			return nil, err
		}
		axes := intsAttr(n, "axes", nil)
		if axes == nil && len(args) > 1 && args[1] != nil {
			axes = ints(args[1])
		}
		return one(reduceMean(args[0], axes, intAttr(n, "keepdims", 1) != 0))
	case "Softmax":
		if err := want(args, 1); err != nil {
			return nil, err
		}
		def := int64(1)
		if opset >= 13 {
			def = -1
		}
		return one(softmax(args[0], int(intAttr(n, "axis", def)), opset >= 13))
	case "Reshape":
		if err := want(args, 2); err != nil {
			return nil, err
		}
		return one(reshape(args[0], ints(args[1])))
	case "Transpose":
		if err := want(args, 1); err != nil {
			return nil, err
		}
		return one(transpose(args[0], intsAttr(n, "perm", nil)))
	case "Slice":
		if err := want(args, 1); err != nil {
			return nil, err
		}
		return one(slice(n, args))
	case "Concat":
		return one(concat(args, int(intAttr(n, "axis", 0))))
	case "Shape":
		if err := want(args, 1); err != nil {
			return nil, err
		}
		t := &Tensor{Shape: []int{len(args[0].Shape)}, Int: true}
		for _, d := range args[0].Shape {
			t.Data = append(t.Data, float64(d))
		}
		return []*Tensor{t}, nil
	case "Gather":
		if err := want(args, 2); err != nil {
			return nil, err
		}
		return one(gather(args[0], args[1], int(intAttr(n, "axis", 0))))
	case "Unsqueeze", "Squeeze":
		if err := want(args, 1); err != nil {
			return nil, err
		}
		axes := intsAttr(n, "axes", nil)
		if axes == nil && len(args) > 1 && args[1] != nil {
			axes = ints(args[1])
		}
		if n.OpType == "Unsqueeze" {
			return one(unsqueeze(args[0], axes))
		}
		return one(squeeze(args[0], axes))
	case "Cast":
		if err := want(args, 1); err != nil {
			return nil, err
		}
		return one(cast(args[0], onnx.DataType(intAttr(n, "to", 0))))
	}
	return nil, fmt.Errorf("operator %s is not supported by the reference evaluator (it runs %v)", n.OpType, Ops)
}

func pow(x, y float64) float64 {
	if y == 2 {
		return x * x
	}
	return math.Pow(x, y)
}

func intAttr(n *onnx.Node, name string, def int64) int64 {
	if a := n.Attr(name); a != nil {
		return a.I
	}
	return def
}

func intsAttr(n *onnx.Node, name string, def []int64) []int64 {
	if a := n.Attr(name); a != nil {
		return a.Ints
	}
	return def
}

func ints(t *Tensor) []int64 {
	out := make([]int64, len(t.Data))
	for i, v := range t.Data {
		out[i] = int64(v)
	}
	return out
}

// axis resolves a possibly negative axis against rank.
func axis(a int64, rank int) (int, error) {
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("axis %d out of range for rank %d", a, rank)
	}
	return int(a), nil
}

func constant(n *onnx.Node) (*Tensor, error) {
	for _, a := range n.Attribute {
		switch a.Name {
		case "value":
			if a.T == nil {
				return nil, fmt.Errorf("value attribute holds no tensor")
			}
			return FromTensor(a.T)
		case "value_float":
			return &Tensor{Shape: []int{}, Data: []float64{float64(a.F)}}, nil
		case "value_floats":
			t := &Tensor{Shape: []int{len(a.Floats)}}
			for _, f := range a.Floats {
				t.Data = append(t.Data, float64(f))
			}
			return t, nil
		case "value_int":
			return &Tensor{Shape: []int{}, Data: []float64{float64(a.I)}, Int: true}, nil
		case "value_ints":
			t := &Tensor{Shape: []int{len(a.Ints)}, Int: true}
			for _, v := range a.Ints {
				t.Data = append(t.Data, float64(v))
			}
			return t, nil
		}
	}
	return nil, fmt.Errorf("no value attribute")
}

// matmul is numpy's matmul: batch dims broadcast, 1-D operands promoted.
func matmul(a, b *Tensor) (*Tensor, error) {
	as, bs := slices.Clone(a.Shape), slices.Clone(b.Shape)
	if len(as) == 0 || len(bs) == 0 {
		return nil, fmt.Errorf("MatMul of a scalar")
	}
	vecA, vecB := len(as) == 1, len(bs) == 1
	if vecA {
		as = []int{1, as[0]}
	}
	if vecB {
		bs = []int{bs[0], 1}
	}
	m, k, k2, nn := as[len(as)-2], as[len(as)-1], bs[len(bs)-2], bs[len(bs)-1]
	if k != k2 {
		return nil, fmt.Errorf("MatMul shapes %v and %v: inner dimensions %d and %d differ", a.Shape, b.Shape, k, k2)
	}
	batch, err := broadcastShape(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return nil, err
	}
	ia := broadcastIndex(as[:len(as)-2], batch)
	ib := broadcastIndex(bs[:len(bs)-2], batch)
	if err := checkSize(append(slices.Clone(batch), m, nn)); err != nil {
		return nil, err
	}
	nb := numel(batch)
	out := make([]float64, nb*m*nn)
	// Rows are independent: split them over the CPUs (each output row is
	// still summed in the same order, so results do not depend on it).
	parallel(nb*m, k*nn, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			bi, i := r/m, r%m
			ad := a.Data[ia[bi]*m*k+i*k:]
			bd := b.Data[ib[bi]*k*nn:]
			row := out[r*nn : (r+1)*nn]
			for p := 0; p < k; p++ {
				av := ad[p]
				if av == 0 {
					continue
				}
				for j, bv := range bd[p*nn : (p+1)*nn] {
					row[j] += av * bv
				}
			}
		}
	})
	shape := append(batch, m, nn)
	if vecA {
		shape = append(shape[:len(shape)-2], nn)
	}
	if vecB {
		shape = shape[:len(shape)-1]
	}
	return &Tensor{Shape: shape, Data: out}, nil
}

// parallel runs f over [0, n) in chunks on up to GOMAXPROCS goroutines
// when the work (n × cost per item) is worth it.
func parallel(n, cost int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || n < 2 || n*cost < 1<<16 {
		f(0, n)
		return
	}
	workers = min(workers, n)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() { defer wg.Done(); f(lo, hi) }()
	}
	wg.Wait()
}

func gemm(n *onnx.Node, args []*Tensor) (*Tensor, error) {
	a, b := args[0], args[1]
	if len(a.Shape) != 2 || len(b.Shape) != 2 {
		return nil, fmt.Errorf("Gemm needs 2-D inputs, has %v and %v", a.Shape, b.Shape)
	}
	if intAttr(n, "transA", 0) != 0 {
		a, _ = transpose(a, []int64{1, 0})
	}
	if intAttr(n, "transB", 0) != 0 {
		b, _ = transpose(b, []int64{1, 0})
	}
	y, err := matmul(a, b)
	if err != nil {
		return nil, err
	}
	alpha, beta := 1.0, 1.0
	if at := n.Attr("alpha"); at != nil {
		alpha = float64(at.F)
	}
	if bt := n.Attr("beta"); bt != nil {
		beta = float64(bt.F)
	}
	for i := range y.Data {
		y.Data[i] *= alpha
	}
	if len(args) > 2 && args[2] != nil {
		return binary(y, args[2], func(x, c float64) float64 { return x + beta*c })
	}
	return y, nil
}

func reduceMean(x *Tensor, axes []int64, keep bool) (*Tensor, error) {
	rank := len(x.Shape)
	red := make([]bool, rank)
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range axes {
		ax, err := axis(a, rank)
		if err != nil {
			return nil, err
		}
		red[ax] = true
	}
	kshape := make([]int, rank) // kept dims, reduced ones as 1
	count := 1
	for i, d := range x.Shape {
		if red[i] {
			kshape[i] = 1
			count *= d
		} else {
			kshape[i] = d
		}
	}
	out := make([]float64, numel(kshape))
	idx := broadcastIndex(kshape, x.Shape) // each input element → its output slot
	for i, v := range x.Data {
		out[idx[i]] += v
	}
	for i := range out {
		out[i] /= float64(count)
	}
	shape := kshape
	if !keep {
		shape = nil
		for i, d := range kshape {
			if !red[i] {
				shape = append(shape, d)
			}
		}
		if shape == nil {
			shape = []int{}
		}
	}
	return &Tensor{Shape: shape, Data: out}, nil
}

// softmax over axis; before opset 13 the input is coerced to 2-D at axis
// (the softmax runs over all dimensions from axis on).
func softmax(x *Tensor, a int, perAxis bool) (*Tensor, error) {
	ax, err := axis(int64(a), len(x.Shape))
	if err != nil {
		return nil, err
	}
	inner := 1 // elements after axis
	for _, d := range x.Shape[ax+1:] {
		inner *= d
	}
	size, outer := x.Shape[ax], numel(x.Shape[:ax])
	if !perAxis { // one softmax over the flattened trailing block
		size, inner = size*inner, 1
	}
	out := make([]float64, len(x.Data))
	for o := 0; o < outer; o++ {
		for in := 0; in < inner; in++ {
			base := o*size*inner + in
			m := math.Inf(-1)
			for i := 0; i < size; i++ {
				m = max(m, x.Data[base+i*inner])
			}
			sum := 0.0
			for i := 0; i < size; i++ {
				e := math.Exp(x.Data[base+i*inner] - m)
				out[base+i*inner] = e
				sum += e
			}
			for i := 0; i < size; i++ {
				out[base+i*inner] /= sum
			}
		}
	}
	return &Tensor{Shape: slices.Clone(x.Shape), Data: out}, nil
}

func reshape(x *Tensor, shape []int64) (*Tensor, error) {
	out := make([]int, len(shape))
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == 0 && i < len(x.Shape):
			out[i] = x.Shape[i]
		case d == -1 && infer < 0:
			infer = i
			continue
		case d < 0:
			return nil, fmt.Errorf("Reshape to %v: bad dimension %d", shape, d)
		default:
			out[i] = int(d)
		}
		known *= out[i]
	}
	if infer >= 0 {
		if known == 0 || len(x.Data)%known != 0 {
			return nil, fmt.Errorf("Reshape %v to %v: cannot infer the -1 dimension", x.Shape, shape)
		}
		out[infer] = len(x.Data) / known
	}
	if err := checkSize(out); err != nil {
		return nil, err
	}
	if numel(out) != len(x.Data) {
		return nil, fmt.Errorf("Reshape %v (%d elements) to %v", x.Shape, len(x.Data), out)
	}
	return &Tensor{Shape: out, Data: x.Data, Int: x.Int}, nil
}

func transpose(x *Tensor, perm []int64) (*Tensor, error) {
	rank := len(x.Shape)
	if perm == nil {
		for i := rank - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != rank {
		return nil, fmt.Errorf("Transpose perm %v for rank %d", perm, rank)
	}
	shape := make([]int, rank)
	for i, p := range perm {
		if p < 0 || int(p) >= rank {
			return nil, fmt.Errorf("Transpose perm %v", perm)
		}
		shape[i] = x.Shape[p]
	}
	// Strides of the input in output order, then walk the output.
	st := strides(x.Shape)
	ps := make([]int, rank)
	for i, p := range perm {
		ps[i] = st[p]
	}
	out := make([]float64, len(x.Data))
	in := broadcastIndexStrides(shape, ps)
	for i := range out {
		out[i] = x.Data[in[i]]
	}
	return &Tensor{Shape: shape, Data: out, Int: x.Int}, nil
}

// broadcastIndexStrides is the input index of each element of shape when
// dimension d advances the input by st[d].
func broadcastIndexStrides(shape, st []int) []int {
	idx := make([]int, numel(shape))
	pos := make([]int, len(shape))
	flat := 0
	for k := range idx {
		idx[k] = flat
		for d := len(shape) - 1; d >= 0; d-- {
			pos[d]++
			flat += st[d]
			if pos[d] < shape[d] {
				break
			}
			flat -= st[d] * pos[d]
			pos[d] = 0
		}
	}
	return idx
}

func slice(n *onnx.Node, args []*Tensor) (*Tensor, error) {
	x := args[0]
	var starts, ends, axes, steps []int64
	if len(args) >= 3 { // opset ≥ 10: inputs
		starts, ends = ints(args[1]), ints(args[2])
		if len(args) > 3 && args[3] != nil {
			axes = ints(args[3])
		}
		if len(args) > 4 && args[4] != nil {
			steps = ints(args[4])
		}
	} else {
		starts, ends, axes = intsAttr(n, "starts", nil), intsAttr(n, "ends", nil), intsAttr(n, "axes", nil)
	}
	if len(starts) != len(ends) {
		return nil, fmt.Errorf("Slice starts %v and ends %v differ in length", starts, ends)
	}
	rank := len(x.Shape)
	lo, step, shape := make([]int, rank), make([]int, rank), slices.Clone(x.Shape)
	for i := range step {
		step[i] = 1
	}
	for i := range starts {
		a := int64(i)
		if axes != nil {
			a = axes[i]
		}
		ax, err := axis(a, rank)
		if err != nil {
			return nil, err
		}
		st := int64(1)
		if steps != nil {
			st = steps[i]
		}
		if st == 0 {
			return nil, fmt.Errorf("Slice step 0")
		}
		d := int64(x.Shape[ax])
		clamp := func(v, lo, hi int64) int64 {
			if v < 0 {
				v += d
			}
			return min(max(v, lo), hi)
		}
		var s, e int64
		if st > 0 {
			s, e = clamp(starts[i], 0, d), clamp(ends[i], 0, d)
		} else {
			s, e = clamp(starts[i], 0, d-1), clamp(ends[i], -1, d-1)
			if ends[i] < -d { // "to the start" for negative steps
				e = -1
			}
		}
		cnt := int64(0)
		if st > 0 && e > s {
			cnt = (e - s + st - 1) / st
		} else if st < 0 && s > e {
			cnt = (s - e - st - 1) / -st
		}
		lo[ax], step[ax], shape[ax] = int(s), int(st), int(cnt)
	}
	xs := strides(x.Shape)
	st := make([]int, rank)
	base := 0
	for i := range st {
		st[i] = xs[i] * step[i]
		base += lo[i] * xs[i]
	}
	out := make([]float64, numel(shape))
	if len(out) > 0 {
		idx := broadcastIndexStrides(shape, st)
		for i := range out {
			out[i] = x.Data[base+idx[i]]
		}
	}
	return &Tensor{Shape: shape, Data: out, Int: x.Int}, nil
}

func concat(args []*Tensor, a int) (*Tensor, error) {
	if len(args) == 0 || args[0] == nil {
		return nil, fmt.Errorf("Concat of nothing")
	}
	rank := len(args[0].Shape)
	ax, err := axis(int64(a), rank)
	if err != nil {
		return nil, err
	}
	shape := slices.Clone(args[0].Shape)
	shape[ax] = 0
	isInt := true
	for _, t := range args {
		if t == nil || len(t.Shape) != rank {
			return nil, fmt.Errorf("Concat inputs differ in rank")
		}
		for d := range shape {
			if d != ax && t.Shape[d] != shape[d] {
				return nil, fmt.Errorf("Concat on axis %d of %v and %v", ax, args[0].Shape, t.Shape)
			}
		}
		shape[ax] += t.Shape[ax]
		isInt = isInt && t.Int
	}
	outer := numel(shape[:ax])
	inner := numel(shape[ax+1:])
	out := make([]float64, 0, numel(shape))
	for o := 0; o < outer; o++ {
		for _, t := range args {
			blk := t.Shape[ax] * inner
			out = append(out, t.Data[o*blk:(o+1)*blk]...)
		}
	}
	return &Tensor{Shape: shape, Data: out, Int: isInt}, nil
}

func gather(x, idx *Tensor, a int) (*Tensor, error) {
	ax, err := axis(int64(a), len(x.Shape))
	if err != nil {
		return nil, err
	}
	d := x.Shape[ax]
	outer, inner := numel(x.Shape[:ax]), numel(x.Shape[ax+1:])
	shape := append(append(slices.Clone(x.Shape[:ax]), idx.Shape...), x.Shape[ax+1:]...)
	if err := checkSize(shape); err != nil {
		return nil, err
	}
	out := make([]float64, 0, numel(shape))
	for o := 0; o < outer; o++ {
		for _, iv := range idx.Data {
			i := int(iv)
			if i < 0 {
				i += d
			}
			if i < 0 || i >= d {
				return nil, fmt.Errorf("Gather index %v out of range [0, %d)", iv, d)
			}
			out = append(out, x.Data[(o*d+i)*inner:(o*d+i+1)*inner]...)
		}
	}
	return &Tensor{Shape: shape, Data: out, Int: x.Int}, nil
}

func unsqueeze(x *Tensor, axes []int64) (*Tensor, error) {
	rank := len(x.Shape) + len(axes)
	ones := make([]bool, rank)
	for _, a := range axes {
		ax, err := axis(a, rank)
		if err != nil {
			return nil, err
		}
		ones[ax] = true
	}
	shape := make([]int, 0, rank)
	j := 0
	for i := 0; i < rank; i++ {
		if ones[i] {
			shape = append(shape, 1)
		} else {
			shape = append(shape, x.Shape[j])
			j++
		}
	}
	return &Tensor{Shape: shape, Data: x.Data, Int: x.Int}, nil
}

func squeeze(x *Tensor, axes []int64) (*Tensor, error) {
	drop := make([]bool, len(x.Shape))
	for _, a := range axes {
		ax, err := axis(a, len(x.Shape))
		if err != nil {
			return nil, err
		}
		if x.Shape[ax] != 1 {
			return nil, fmt.Errorf("Squeeze axis %d has size %d", ax, x.Shape[ax])
		}
		drop[ax] = true
	}
	shape := []int{}
	for i, d := range x.Shape {
		if !drop[i] && !(len(axes) == 0 && d == 1) {
			shape = append(shape, d)
		}
	}
	return &Tensor{Shape: shape, Data: x.Data, Int: x.Int}, nil
}

func cast(x *Tensor, to onnx.DataType) (*Tensor, error) {
	out := &Tensor{Shape: slices.Clone(x.Shape), Data: slices.Clone(x.Data)}
	switch to {
	case onnx.Float, onnx.Double:
	case onnx.Float16:
		out.roundF16()
	case onnx.Bool:
		out.Int = true
		for i, v := range out.Data {
			if v != 0 {
				out.Data[i] = 1
			}
		}
	case onnx.Int64, onnx.Int32, onnx.Int16, onnx.Int8, onnx.Uint8, onnx.Uint16, onnx.Uint32, onnx.Uint64:
		out.Int = true
		for i, v := range out.Data {
			out.Data[i] = math.Trunc(v)
		}
	default:
		return nil, fmt.Errorf("Cast to %v is not supported", to)
	}
	return out, nil
}
