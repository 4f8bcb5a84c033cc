package rknn

import (
	"slices"

	"github.com/edgectl/edgectl/format/onnx"
)

// part is one shard's slice of the graph.
type part struct {
	nodes   []*onnx.Node
	ends    string // the residual Add that closes it ("" for a whole-graph shard)
	inputs  []string
	outputs []string
}

// cut splits the graph after every residual Add: an Add of two
// equally-shaped non-constant tensors one of which is the residual stream
// (the graph input, carried through Add/Sub of constants, then each
// residual Add's output). In a pre-LayerNorm transformer that is one shard
// per layer and part (attention, MLP); what follows the last residual Add
// (the final LayerNorm) joins the last shard. Each shard takes every
// ancestor of its residual Add that no earlier shard took.
func (g *graph) cut() []part {
	stream := map[string]bool{}
	for _, in := range g.inputs {
		stream[in.Name] = true
	}
	var cuts []int
	for i, n := range g.nodes {
		if (n.OpType != "Add" && n.OpType != "Sub") || len(n.Input) != 2 {
			continue
		}
		a, b := n.Input[0], n.Input[1]
		ca, cb := g.inits[a] != nil, g.inits[b] != nil
		switch {
		case ca != cb && (stream[a] || stream[b]):
			stream[n.Output[0]] = true
		case !ca && !cb && n.OpType == "Add" && (stream[a] || stream[b]) && slices.Equal(g.shapes[a], g.shapes[b]):
			stream[n.Output[0]] = true
			cuts = append(cuts, i)
		}
	}
	prod := g.producers()
	owner := make([]int, len(g.nodes))
	for i := range owner {
		owner[i] = -1
	}
	var parts []part
	for pi, ci := range cuts {
		stack := []int{ci}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if owner[i] >= 0 {
				continue
			}
			owner[i] = pi
			for _, in := range g.nodes[i].Input {
				if j, ok := prod[in]; ok && owner[j] < 0 {
					stack = append(stack, j)
				}
			}
		}
		parts = append(parts, part{ends: g.nodes[ci].Name})
	}
	if len(parts) == 0 {
		parts = append(parts, part{})
	}
	for i, n := range g.nodes {
		o := owner[i]
		if o < 0 {
			o = len(parts) - 1 // the tail after the last residual Add
		}
		parts[o].nodes = append(parts[o].nodes, n)
	}
	// Each part's inputs: tensors it reads that it does not make and that
	// are not constants; outputs: tensors it makes that a later part or the
	// graph output reads.
	madeIn := map[string]int{}
	for pi, p := range parts {
		for _, n := range p.nodes {
			for _, o := range n.Output {
				madeIn[o] = pi
			}
		}
	}
	for pi := range parts {
		p := &parts[pi]
		seen := map[string]bool{}
		for _, n := range p.nodes {
			for _, in := range n.Input {
				if in == "" || g.inits[in] != nil || seen[in] {
					continue
				}
				if m, ok := madeIn[in]; !ok || m != pi {
					seen[in] = true
					p.inputs = append(p.inputs, in)
					if ok {
						q := &parts[m]
						if !slices.Contains(q.outputs, in) {
							q.outputs = append(q.outputs, in)
						}
					}
				}
			}
		}
	}
	for _, o := range g.outputs {
		if m, ok := madeIn[o.Name]; ok && !slices.Contains(parts[m].outputs, o.Name) {
			parts[m].outputs = append(parts[m].outputs, o.Name)
		}
	}
	return parts
}
