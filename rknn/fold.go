package rknn

import (
	"fmt"
	"slices"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/rknn/onnxeval"
)

// fold turns everything that does not depend on the input into
// initializers: Constant nodes, Shape of a tensor whose shape the sample
// run fixed, and any node whose inputs are all constant (torch's
// Shape → Gather → Unsqueeze → Concat chains become one INT64 initializer).
// Identity nodes are dropped. The values are the ones the graph computes,
// so this is exact; shards then hold no shape arithmetic for the NPU
// compiler to mis-handle. Needs evaluate's shapes.
func (g *graph) fold() error {
	rename := map[string]string{} // Identity outputs → their input
	kept := g.nodes[:0]
	for _, n := range g.nodes {
		for i, in := range n.Input {
			if r, ok := rename[in]; ok {
				n.Input[i] = r
			}
		}
		var vals []*onnxeval.Tensor
		switch {
		case n.OpType == "Identity" && len(n.Input) == 1 && !g.isOutput(n.Output[0]):
			rename[n.Output[0]] = n.Input[0]
			continue
		case n.OpType == "Constant":
			a := n.Attr("value")
			if a == nil || a.T == nil {
				break // value_float & co: evaluate below
			}
			t := *a.T
			t.Name = n.Output[0]
			g.inits[t.Name] = &t
			continue
		case n.OpType == "Shape" && len(n.Input) == 1:
			s, ok := g.shapes[n.Input[0]]
			if !ok {
				return fmt.Errorf("node %q (Shape): the shape of %q is not known from the sample run", n.Name, n.Input[0])
			}
			vals = []*onnxeval.Tensor{{Shape: []int{len(s)}, Data: floats(s), Int: true}}
		}
		if vals == nil && g.allConst(n) {
			args := make([]*onnxeval.Tensor, len(n.Input))
			for i, in := range n.Input {
				if in != "" {
					args[i], _ = g.constant(in)
				}
			}
			var err error
			if vals, err = onnxeval.Apply(n, args, g.opset); err != nil {
				return err
			}
		}
		if vals == nil || len(vals) != len(n.Output) || slices.ContainsFunc(n.Output, g.isOutput) {
			kept = append(kept, n)
			continue
		}
		for i, v := range vals {
			name := n.Output[i]
			if v.Int {
				g.inits[name] = onnx.Int64Tensor(name, int64s(v.Shape), ints(v.Data))
			} else {
				g.inits[name] = onnx.FloatTensor(name, int64s(v.Shape), v.Data)
			}
		}
	}
	g.nodes = kept
	for _, o := range g.outputs {
		if r, ok := rename[o.Name]; ok {
			return fmt.Errorf("graph output %q is an Identity of %q: export without the Identity", o.Name, r)
		}
	}
	g.prune()
	return nil
}

func (g *graph) allConst(n *onnx.Node) bool {
	if n.OpType == "Constant" {
		return true
	}
	any := false
	for _, in := range n.Input {
		if in == "" {
			continue
		}
		if g.inits[in] == nil {
			return false
		}
		any = true
	}
	return any
}

func floats(s []int) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

func ints(s []float64) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}
