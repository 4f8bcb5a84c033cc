package onnxeval

import (
	"context"
	"fmt"
	"slices"

	"github.com/edgectl/edgectl/format/onnx"
)

// Options control a run.
type Options struct {
	// FP16 rounds every float tensor (inputs, initializers, each
	// operator's outputs) to half precision, as the NPU stores them.
	FP16 bool
	// Keep says which intermediate tensors Run returns besides the graph
	// outputs; nil keeps all (memory grows with the graph), so a caller
	// that needs only outputs passes func(string) bool { return false }.
	Keep func(name string) bool
	// Observe, when set, sees every graph input and node output as it is
	// computed (after FP16 rounding): calibration and shape collection
	// without keeping the tensors. It must not modify them.
	Observe func(name string, t *Tensor)
}

// Run evaluates the graph of m on inputs (by graph input name) and returns
// the graph outputs and the tensors Keep asks for. Nodes run in file
// order, which ONNX requires to be topological.
func Run(ctx context.Context, m *onnx.Model, inputs map[string]*Tensor, o Options) (map[string]*Tensor, error) {
	if m.Graph == nil {
		return nil, fmt.Errorf("onnxeval: the model has no graph")
	}
	opset := m.Opset()
	if opset == 0 {
		opset = 12
	}
	vals := map[string]*Tensor{}
	for _, t := range m.Graph.Initializer {
		v, err := FromTensor(t)
		if err != nil {
			return nil, fmt.Errorf("onnxeval: initializer %q: %v", t.Name, err)
		}
		if o.FP16 {
			v.roundF16()
		}
		vals[t.Name] = v
	}
	for _, in := range m.Graph.Input {
		v, ok := inputs[in.Name]
		if !ok {
			if _, isInit := vals[in.Name]; isInit {
				continue
			}
			return nil, fmt.Errorf("onnxeval: no value for graph input %q", in.Name)
		}
		v = &Tensor{Shape: slices.Clone(v.Shape), Data: slices.Clone(v.Data), Int: v.Int}
		if o.FP16 {
			v.roundF16()
		}
		vals[in.Name] = v
		if o.Observe != nil {
			o.Observe(in.Name, v)
		}
	}
	// uses counts the consumers left, so tensors nobody keeps are freed.
	uses := map[string]int{}
	for _, n := range m.Graph.Node {
		for _, in := range n.Input {
			uses[in]++
		}
	}
	isOutput := map[string]bool{}
	for _, out := range m.Graph.Output {
		isOutput[out.Name] = true
	}
	keep := func(name string) bool { return isOutput[name] || o.Keep == nil || o.Keep(name) }
	for i, n := range m.Graph.Node {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		args := make([]*Tensor, len(n.Input))
		for j, in := range n.Input {
			if in == "" {
				continue // an omitted optional input
			}
			if args[j] = vals[in]; args[j] == nil {
				return nil, fmt.Errorf("onnxeval: node %q (%s) input %q has no value: it is not produced before the node (the graph must be topologically sorted)", n.Name, n.OpType, in)
			}
		}
		outs, err := Apply(n, args, opset)
		if err != nil {
			return nil, err
		}
		for j, out := range outs {
			if j < len(n.Output) && n.Output[j] != "" {
				if o.FP16 {
					out.roundF16()
				}
				vals[n.Output[j]] = out
				if o.Observe != nil {
					o.Observe(n.Output[j], out)
				}
			}
		}
		for _, in := range n.Input {
			if uses[in]--; uses[in] == 0 && !keep(in) {
				delete(vals, in)
			}
		}
	}
	res := map[string]*Tensor{}
	for name, v := range vals {
		if keep(name) {
			res[name] = v
		}
	}
	for _, out := range m.Graph.Output {
		if res[out.Name] == nil {
			return nil, fmt.Errorf("onnxeval: graph output %q is never produced", out.Name)
		}
	}
	return res, nil
}

// FromTensor decodes an ONNX tensor (initializer or Constant value).
func FromTensor(t *onnx.Tensor) (*Tensor, error) {
	data, err := t.Float64s()
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		shape[i] = int(d)
	}
	switch t.DataType {
	case onnx.Float, onnx.Double, onnx.Float16, onnx.BFloat16:
		return &Tensor{Shape: shape, Data: data}, nil
	}
	return &Tensor{Shape: shape, Data: data, Int: true}, nil
}

// Apply runs one node on its inputs (nil for an omitted optional input)
// under the given default-domain opset: constant folding uses it.
func Apply(n *onnx.Node, args []*Tensor, opset int64) ([]*Tensor, error) {
	outs, err := apply(n, args, opset)
	if err != nil {
		return nil, fmt.Errorf("onnxeval: node %q (%s): %v", n.Name, n.OpType, err)
	}
	return outs, nil
}
