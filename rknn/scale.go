package rknn

import (
	"fmt"
	"math"
	"slices"

	"github.com/edgectl/edgectl/format/onnx"
)

// The sandwich: the graph input arrives multiplied by s (on the host) and
// every tensor carries a known power of s. A pre-LayerNorm transformer then
// runs exactly as before in real arithmetic, with its large residual
// stream s times smaller:
//
//   - Add/Sub of a constant (bias, position embedding, LayerNorm eps)
//     scales the constant to the other operand's power (eps becomes eps·s²);
//   - a residual Add of the stream (s¹) and a branch output (s⁰) scales
//     the branch: its last MatMul's weight and bias are multiplied by s
//     (or a Mul by s is inserted where no constant can take it);
//   - Mul/MatMul add powers, Div subtracts, Pow by constant p multiplies
//     by p, Sqrt halves; shape operators and ReduceMean keep the power;
//   - LayerNorm's Div((x−μ)·s, √(σ²s² + eps·s²)) lands at s⁰, so
//     everything after it (attention, MLP, the final LayerNorm) is
//     unchanged, and nonlinear operators (Softmax, Erf, Sigmoid, …) must
//     see s⁰ or the pass refuses the graph.
//
// The host divides each graph output by its power of s.

// scaleLimit is what every scaled tensor must stay under on the sample
// input when s is chosen automatically: 1/16 of FP16's largest value,
// leaving room for sums the NPU may form in FP16.
const scaleLimit = 65504.0 / 16

type scaleAction struct {
	node     *onnx.Node
	input    int     // which input of node to rescale
	power    float64 // by s^power
	isBranch bool    // a non-constant branch output (fold into its producer)
}

// scalePlan computes every tensor's power of s and the rewrites that make
// the graph carry them; it changes nothing.
func (g *graph) scalePlan() (powers map[string]float64, acts []scaleAction, err error) {
	k := map[string]float64{}
	for _, in := range g.inputs {
		k[in.Name] = 1
	}
	isConst := func(name string) bool { return g.inits[name] != nil }
	for _, n := range g.nodes {
		in := make([]float64, len(n.Input))
		for i, name := range n.Input {
			if !isConst(name) && !g.isInt[name] {
				in[i] = k[name]
			}
		}
		out := 0.0
		fail := func(why string) error {
			return fmt.Errorf("node %q (%s): %s; the sandwich cannot carry the scale through it (pass --scale 1 to shard without scaling)", n.Name, n.OpType, why)
		}
		switch n.OpType {
		case "Add", "Sub":
			if len(n.Input) != 2 {
				return nil, nil, fail("needs 2 inputs")
			}
			a, b := n.Input[0], n.Input[1]
			switch {
			case isConst(a) && !isConst(b):
				out = in[1]
				if out != 0 {
					acts = append(acts, scaleAction{node: n, input: 0, power: out})
				}
			case isConst(b) && !isConst(a):
				out = in[0]
				if out != 0 {
					acts = append(acts, scaleAction{node: n, input: 1, power: out})
				}
			case in[0] == in[1]:
				out = in[0]
			case in[0] == 0:
				out = in[1]
				acts = append(acts, scaleAction{node: n, input: 0, power: out, isBranch: true})
			case in[1] == 0:
				out = in[0]
				acts = append(acts, scaleAction{node: n, input: 1, power: out, isBranch: true})
			default:
				return nil, nil, fail(fmt.Sprintf("adds tensors at s^%g and s^%g", in[0], in[1]))
			}
		case "Mul", "MatMul":
			out = in[0] + in[1]
		case "Gemm":
			out = in[0] + in[1]
			if len(n.Input) > 2 && n.Input[2] != "" {
				switch {
				case isConst(n.Input[2]) && out != 0:
					acts = append(acts, scaleAction{node: n, input: 2, power: out})
				case !isConst(n.Input[2]) && in[2] != out:
					return nil, nil, fail("its bias is at another power of s")
				}
			}
		case "Div":
			out = in[0] - in[1]
		case "Pow":
			if in[0] != 0 {
				p, ok := g.constant(n.Input[1])
				if !ok || len(p.Data) != 1 {
					return nil, nil, fail("the exponent is not a constant scalar")
				}
				out = in[0] * p.Data[0]
			}
		case "Sqrt":
			out = in[0] / 2
		case "ReduceMean", "Reshape", "Transpose", "Slice", "Squeeze", "Unsqueeze", "Identity", "Neg", "Relu", "Gather", "Cast":
			out = in[0]
		case "Concat":
			for i := range in {
				if !isConst(n.Input[i]) && in[i] != in[0] {
					return nil, nil, fail("concatenates tensors at different powers of s")
				}
			}
			out = in[0]
		case "Shape":
		default: // nonlinear: Softmax, Erf, Sigmoid, Tanh, Exp, …
			for i, p := range in {
				if p != 0 {
					return nil, nil, fail(fmt.Sprintf("input %q is at s^%g and the operator is not scale-equivariant", n.Input[i], p))
				}
			}
		}
		for _, o := range n.Output {
			if !g.isInt[o] {
				k[o] = out
			}
		}
	}
	return k, acts, nil
}

// chooseScale is the largest power of two s ≤ 1 that keeps every tensor
// carried at a positive power of s under scaleLimit on the sample run.
func (g *graph) chooseScale(powers map[string]float64) (s float64, worst string) {
	s = 1
	for name, p := range powers {
		m := g.maxAbs[name]
		if p <= 0 || m == 0 {
			continue
		}
		if math.IsInf(m, 0) {
			continue // the float64 run does not overflow; a NaN input is the sample's problem
		}
		if lim := math.Pow(scaleLimit/m, 1/p); lim < s {
			s, worst = lim, name
		}
	}
	if s < 1 {
		s = math.Exp2(math.Floor(math.Log2(s)))
	}
	return s, worst
}

// applyScale rewrites the graph to carry the planned powers of s.
func (g *graph) applyScale(s float64, acts []scaleAction) error {
	for _, a := range acts {
		f := math.Pow(s, a.power)
		if a.isBranch {
			if err := g.scaleBranch(a.node, a.input, f); err != nil {
				return err
			}
			continue
		}
		name, err := g.scaledConst(a.node.Input[a.input], f)
		if err != nil {
			return fmt.Errorf("node %q (%s): %v", a.node.Name, a.node.OpType, err)
		}
		a.node.Input[a.input] = name
	}
	return nil
}

// scaleBranch multiplies the value consumer reads at input idx by f,
// folding f into the constants of the operators that produce it when that
// tensor feeds nothing else (bias Add, then the MatMul/Gemm weight), and
// inserting a Mul otherwise.
func (g *graph) scaleBranch(consumer *onnx.Node, idx int, f float64) error {
	t := consumer.Input[idx]
	prod := g.producers()
	pi, ok := prod[t]
	if ok && len(g.consumers()[t]) == 1 && !g.isOutput(t) {
		p := g.nodes[pi]
		constIdx := -1
		for i, in := range p.Input {
			if g.inits[in] != nil && g.inits[in].DataType == onnx.Float {
				constIdx = i
			}
		}
		switch {
		case (p.OpType == "Add" || p.OpType == "Sub") && len(p.Input) == 2 && constIdx >= 0 && g.inits[p.Input[1-constIdx]] == nil:
			name, err := g.scaledConst(p.Input[constIdx], f)
			if err != nil {
				return err
			}
			p.Input[constIdx] = name
			return g.scaleBranch(p, 1-constIdx, f)
		case (p.OpType == "MatMul" || p.OpType == "Mul") && constIdx >= 0 && len(p.Input) == 2:
			name, err := g.scaledConst(p.Input[constIdx], f)
			if err != nil {
				return err
			}
			p.Input[constIdx] = name
			return nil
		case p.OpType == "Gemm" && g.inits[p.Input[1]] != nil:
			for _, i := range []int{1, 2} {
				if i < len(p.Input) && p.Input[i] != "" {
					if g.inits[p.Input[i]] == nil {
						goto insert
					}
				}
			}
			for _, i := range []int{1, 2} {
				if i < len(p.Input) && p.Input[i] != "" {
					name, err := g.scaledConst(p.Input[i], f)
					if err != nil {
						return err
					}
					p.Input[i] = name
				}
			}
			return nil
		}
	}
insert:
	c := g.addFloat(t+"_scale", nil, []float64{f})
	mul := g.newNode("Mul", t+"_scaled", nil, t, c)
	consumer.Input[idx] = mul.Output[0]
	at := slices.Index(g.nodes, consumer)
	g.nodes = slices.Insert(g.nodes, at, mul)
	return nil
}
