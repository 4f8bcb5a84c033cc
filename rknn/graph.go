package rknn

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/rknn/onnxeval"
)

// graph is the model being rewritten: nodes in topological order,
// initializers by name, and what the last evaluation saw of each tensor.
type graph struct {
	src     *onnx.Model // ir_version, opset_import for the shards
	opset   int64
	nodes   []*onnx.Node
	inits   map[string]*onnx.Tensor
	inputs  []*onnx.ValueInfo // graph inputs that are not initializers
	outputs []*onnx.ValueInfo
	used    map[string]bool // every tensor and node name, for fresh names

	// From the last evaluate: shapes, which tensors are integer, max |x|.
	shapes map[string][]int
	isInt  map[string]bool
	maxAbs map[string]float64
}

func newGraph(m *onnx.Model) *graph {
	g := &graph{src: m, opset: m.Opset(), inits: map[string]*onnx.Tensor{}, used: map[string]bool{}}
	if g.opset == 0 {
		g.opset = 12
	}
	for _, t := range m.Graph.Initializer {
		g.inits[t.Name] = t
		g.used[t.Name] = true
	}
	for _, in := range m.Graph.Input {
		if g.inits[in.Name] == nil {
			g.inputs = append(g.inputs, in)
		}
		g.used[in.Name] = true
	}
	g.outputs = m.Graph.Output
	for _, n := range m.Graph.Node {
		c := *n // passes edit nodes; the source model stays as read
		c.Input, c.Output = slices.Clone(n.Input), slices.Clone(n.Output)
		g.nodes = append(g.nodes, &c)
		g.used[n.Name] = true
		for _, o := range n.Output {
			g.used[o] = true
		}
	}
	return g
}

// fresh returns a tensor or node name not yet used, based on base.
func (g *graph) fresh(base string) string {
	name := base
	for i := 1; g.used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	g.used[name] = true
	return name
}

// model assembles the current graph as a model.
func (g *graph) model() *onnx.Model {
	gr := &onnx.Graph{Name: g.src.Graph.Name, Node: g.nodes, Input: g.inputs, Output: g.outputs}
	for _, name := range g.liveInits() {
		gr.Initializer = append(gr.Initializer, g.inits[name])
	}
	return &onnx.Model{IRVersion: g.src.IRVersion, OpsetImport: g.src.OpsetImport, ProducerName: "edgectl", Graph: gr}
}

// liveInits are the initializers some node reads, in first-use order.
func (g *graph) liveInits() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range g.nodes {
		for _, in := range n.Input {
			if g.inits[in] != nil && !seen[in] {
				seen[in] = true
				out = append(out, in)
			}
		}
	}
	return out
}

// evaluate runs the graph in float64 on input and records every tensor's
// shape, integer-ness and max |x|; it returns the graph outputs.
func (g *graph) evaluate(ctx context.Context, inputs map[string]*onnxeval.Tensor) (map[string]*onnxeval.Tensor, error) {
	g.shapes, g.isInt, g.maxAbs = map[string][]int{}, map[string]bool{}, map[string]float64{}
	for name, t := range g.inits {
		g.shapes[name] = dimsOf(t)
		g.isInt[name] = !isFloat(t.DataType)
	}
	return onnxeval.Run(ctx, g.model(), inputs, onnxeval.Options{
		Keep: func(string) bool { return false },
		Observe: func(name string, t *onnxeval.Tensor) {
			g.shapes[name] = slices.Clone(t.Shape)
			g.isInt[name] = t.Int
			g.maxAbs[name] = t.MaxAbs()
		},
	})
}

func dimsOf(t *onnx.Tensor) []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[i] = int(d)
	}
	return s
}

func isFloat(d onnx.DataType) bool {
	return d == onnx.Float || d == onnx.Float16 || d == onnx.Double || d == onnx.BFloat16
}

// producers maps each node output to its node's index.
func (g *graph) producers() map[string]int {
	p := map[string]int{}
	for i, n := range g.nodes {
		for _, o := range n.Output {
			p[o] = i
		}
	}
	return p
}

// consumers maps each tensor to the nodes that read it.
func (g *graph) consumers() map[string][]*onnx.Node {
	c := map[string][]*onnx.Node{}
	for _, n := range g.nodes {
		for _, in := range n.Input {
			if in != "" {
				c[in] = append(c[in], n)
			}
		}
	}
	return c
}

func (g *graph) isOutput(name string) bool {
	for _, o := range g.outputs {
		if o.Name == name {
			return true
		}
	}
	return false
}

// constant reads an initializer's values.
func (g *graph) constant(name string) (*onnxeval.Tensor, bool) {
	t := g.inits[name]
	if t == nil {
		return nil, false
	}
	v, err := onnxeval.FromTensor(t)
	return v, err == nil
}

// addFloat adds a FLOAT initializer under a fresh name.
func (g *graph) addFloat(base string, shape []int, vals []float64) string {
	name := g.fresh(base)
	g.inits[name] = onnx.FloatTensor(name, int64s(shape), vals)
	return name
}

// addInts adds an INT64 initializer under a fresh name.
func (g *graph) addInts(base string, vals ...int64) string {
	name := g.fresh(base)
	g.inits[name] = onnx.Int64Tensor(name, []int64{int64(len(vals))}, vals)
	return name
}

// addNode makes a node with fresh names for it and its output.
func (g *graph) newNode(op, base string, attrs []*onnx.Attribute, in ...string) *onnx.Node {
	return &onnx.Node{OpType: op, Name: g.fresh(base), Input: in, Output: []string{g.fresh(base + "_out")}, Attribute: attrs}
}

func int64s(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

func numel(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// prune drops nodes whose outputs nobody reads (and are no graph output).
func (g *graph) prune() {
	for {
		c := g.consumers()
		kept := g.nodes[:0]
		for _, n := range g.nodes {
			live := false
			for _, o := range n.Output {
				if len(c[o]) > 0 || g.isOutput(o) {
					live = true
				}
			}
			if live {
				kept = append(kept, n)
			}
		}
		if len(kept) == len(g.nodes) {
			return
		}
		g.nodes = kept
	}
}

// scaledConst is the FLOAT initializer name holding name's values times
// f (a new initializer; the old one is dropped when nothing reads it).
func (g *graph) scaledConst(name string, f float64) (string, error) {
	if f == 1 {
		return name, nil
	}
	t := g.inits[name]
	if t == nil {
		return "", fmt.Errorf("%q is not a constant", name)
	}
	if t.DataType != onnx.Float {
		return "", fmt.Errorf("constant %q is %v: the sandwich rescales FLOAT constants only", name, t.DataType)
	}
	v, err := t.Float64s()
	if err != nil {
		return "", err
	}
	for i := range v {
		v[i] *= f
		if math.IsInf(float64(float32(v[i])), 0) {
			return "", fmt.Errorf("constant %q times %g overflows float32", name, f)
		}
	}
	return g.addFloat(name+"_scaled", dimsOf(t), v), nil
}
