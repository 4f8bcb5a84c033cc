package rknn

import (
	"fmt"
	"slices"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/format/rknnchain"
)

// Barrier kinds: how tiles are kept from being fused back together.
const (
	BarrierPill  = "pill"  // slice → sigmoid → ×1e-6 → add between tiles
	BarrierRules = "rules" // rknn-toolkit2 disable_rules in the build config
	BarrierBoth  = "both"
	BarrierNone  = "none"
)

// pillWeight is the poison pill's factor: small enough to vanish below
// FP16 resolution of attention outputs, large enough that a compiler
// cannot prove the edge dead.
const pillWeight = 1e-6

// attention is one Q·Kᵀ → (elementwise by constants) → Softmax → ·V chain.
type attention struct {
	qk, sm, pv *onnx.Node
	chain      []*onnx.Node // between qk and sm, in order
	q, kt, v   string
	rank       int
	heads, n   int // heads (axis rank−3), query rows (axis rank−2)
	keys       int
	lead       int // product of the dims before the head axis
}

// tile splits every attention whose Softmax input exceeds budget bytes in
// FP16 into per-head, per-query-row-block tiles whose Softmax inputs fit.
// Softmax over keys is independent per query row, so the tiles compute
// exactly the untiled values; the per-head Concat puts them back. With
// pill, each tile's output gets 1e-6·σ(previous tile's first element)
// added: a data dependency between tiles (not exact: < 1e-6 absolute).
func (g *graph) tile(budget int, pill bool) ([]rknnchain.TileResult, error) {
	var res []rknnchain.TileResult
	for _, sm := range slices.Clone(g.nodes) {
		if sm.OpType != "Softmax" {
			continue
		}
		shape := g.shapes[sm.Input[0]]
		bytes := 2 * numel(shape)
		if bytes <= budget {
			continue
		}
		a, err := g.findAttention(sm)
		if err != nil {
			return nil, fmt.Errorf("Softmax %q: its input %v is %d bytes in FP16, over the %d-byte budget, and it cannot be tiled: %v", sm.Name, shape, bytes, budget, err)
		}
		row := 2 * a.lead * a.keys // one query row of one head
		if row > budget {
			return nil, fmt.Errorf("Softmax %q: one query row of %d keys is %d bytes in FP16, over the %d-byte budget: tiling by rows cannot fit it (raise --sram-kb)", sm.Name, a.keys, row, budget)
		}
		rows := min(budget/row, a.n)
		r, err := g.rewriteAttention(a, rows, pill)
		if err != nil {
			return nil, err
		}
		r.Bytes = bytes
		res = append(res, r)
	}
	return res, nil
}

// findAttention matches sm's chain and checks the shapes tiling needs.
func (g *graph) findAttention(sm *onnx.Node) (*attention, error) {
	prod, cons := g.producers(), g.consumers()
	a := &attention{sm: sm}
	shape := g.shapes[sm.Input[0]]
	a.rank = len(shape)
	if a.rank < 3 {
		return nil, fmt.Errorf("rank %d: want [..., heads, queries, keys]", a.rank)
	}
	ax := int64(1)
	if g.opset >= 13 {
		ax = -1
	}
	if at := sm.Attr("axis"); at != nil {
		ax = at.I
	}
	if ax < 0 {
		ax += int64(a.rank)
	}
	if ax != int64(a.rank-1) {
		return nil, fmt.Errorf("it normalizes over axis %d, not the last (keys)", ax)
	}
	// Walk up through elementwise operators with a constant operand.
	t := sm.Input[0]
	for {
		pi, ok := prod[t]
		if !ok {
			return nil, fmt.Errorf("no MatMul of queries and keys feeds it")
		}
		p := g.nodes[pi]
		if len(cons[t]) != 1 {
			return nil, fmt.Errorf("%q is read by %d nodes", t, len(cons[t]))
		}
		if p.OpType == "MatMul" && g.inits[p.Input[0]] == nil && g.inits[p.Input[1]] == nil {
			a.qk = p
			break
		}
		switch p.OpType {
		case "Mul", "Div", "Add", "Sub":
			c := p.Input[1]
			if g.inits[c] == nil {
				return nil, fmt.Errorf("node %q (%s) between the scores and Softmax has no constant operand", p.Name, p.OpType)
			}
			cs := g.shapes[c]
			if len(cs) >= 2 && cs[len(cs)-2] > 1 || len(cs) >= 3 && cs[len(cs)-3] > 1 {
				return nil, fmt.Errorf("node %q (%s) adds a constant that varies by query row or head (a mask): not tiled yet", p.Name, p.OpType)
			}
			a.chain = append([]*onnx.Node{p}, a.chain...)
			t = p.Input[0]
		default:
			return nil, fmt.Errorf("node %q (%s) between the scores and Softmax is not an elementwise operator with a constant", p.Name, p.OpType)
		}
	}
	a.q, a.kt = a.qk.Input[0], a.qk.Input[1]
	if c := cons[sm.Output[0]]; len(c) != 1 || c[0].OpType != "MatMul" || c[0].Input[0] != sm.Output[0] || g.inits[c[0].Input[1]] != nil {
		return nil, fmt.Errorf("its output does not feed exactly one MatMul with the values")
	} else {
		a.pv, a.v = c[0], c[0].Input[1]
	}
	qs, ks, vs := g.shapes[a.q], g.shapes[a.kt], g.shapes[a.v]
	r := a.rank
	if len(qs) != r || len(ks) != r || len(vs) != r {
		return nil, fmt.Errorf("queries %v, keys %v and values %v must all have rank %d", qs, ks, vs, r)
	}
	a.heads, a.n, a.keys = shape[r-3], shape[r-2], shape[r-1]
	if qs[r-3] != a.heads || ks[r-3] != a.heads || vs[r-3] != a.heads || vs[r-2] != a.keys {
		return nil, fmt.Errorf("queries %v, keys %v, values %v: heads must match on axis %d (no broadcasting)", qs, ks, vs, r-3)
	}
	a.lead = numel(shape[:r-3])
	return a, nil
}

// rewriteAttention replaces the chain by tiles of rows query rows per head.
func (g *graph) rewriteAttention(a *attention, rows int, pill bool) (rknnchain.TileResult, error) {
	r := a.rank
	headAx, rowAx := int64(r-3), int64(r-2)
	base := a.sm.Name
	var nodes []*onnx.Node
	add := func(n *onnx.Node) string { nodes = append(nodes, n); return n.Output[0] }
	slice := func(x string, axes []int64, starts, ends []int64, what string) string {
		return add(g.newNode("Slice", base+"/"+what, nil, x, g.addInts(base+"/"+what+"_starts", starts...),
			g.addInts(base+"/"+what+"_ends", ends...), g.addInts(base+"/"+what+"_axes", axes...)))
	}
	res := rknnchain.TileResult{Softmax: a.sm.Name, Rows: rows}
	var heads []string
	prev, weight := "", ""
	for h := 0; h < a.heads; h++ {
		hh := int64(h)
		kt := slice(a.kt, []int64{headAx}, []int64{hh}, []int64{hh + 1}, fmt.Sprintf("k_h%d", h))
		v := slice(a.v, []int64{headAx}, []int64{hh}, []int64{hh + 1}, fmt.Sprintf("v_h%d", h))
		var blocks []string
		for r0 := 0; r0 < a.n; r0 += rows {
			r1 := min(r0+rows, a.n)
			tag := fmt.Sprintf("h%d_r%d", h, r0)
			q := slice(a.q, []int64{headAx, rowAx}, []int64{hh, int64(r0)}, []int64{hh + 1, int64(r1)}, "q_"+tag)
			x := add(g.newNode("MatMul", base+"/scores_"+tag, nil, q, kt))
			for _, c := range a.chain {
				x = add(g.newNode(c.OpType, base+"/"+c.OpType+"_"+tag, nil, x, c.Input[1]))
			}
			x = add(g.newNode("Softmax", base+"/softmax_"+tag, []*onnx.Attribute{onnx.IntAttr("axis", int64(r-1))}, x))
			res.MaxBytes = max(res.MaxBytes, 2*a.lead*(r1-r0)*a.keys)
			o := add(g.newNode("MatMul", base+"/context_"+tag, nil, x, v))
			if pill && prev != "" {
				ends := make([]int64, r)
				for i := range ends {
					ends[i] = 1
				}
				axes := make([]int64, r)
				for i := range axes {
					axes[i] = int64(i)
				}
				p := slice(prev, axes, make([]int64, r), ends, "pill_"+tag)
				p = add(g.newNode("Sigmoid", base+"/pill_sigmoid_"+tag, nil, p))
				if weight == "" {
					weight = g.addFloat(base+"/pill_weight", nil, []float64{pillWeight})
				}
				p = add(g.newNode("Mul", base+"/pill_mul_"+tag, nil, p, weight))
				o = add(g.newNode("Add", base+"/pill_add_"+tag, nil, o, p))
			}
			prev = o
			blocks = append(blocks, o)
			res.Tiles++
		}
		heads = append(heads, add(g.newNode("Concat", base+"/rows_h"+fmt.Sprint(h), []*onnx.Attribute{onnx.IntAttr("axis", rowAx)}, blocks...)))
	}
	add(g.newNode("Concat", base+"/heads", []*onnx.Attribute{onnx.IntAttr("axis", headAx)}, heads...))
	nodes[len(nodes)-1].Output[0] = a.pv.Output[0] // downstream reads the same name
	drop := append([]*onnx.Node{a.qk, a.sm, a.pv}, a.chain...)
	at := slices.Index(g.nodes, a.pv)
	g.nodes = slices.Insert(g.nodes, at+1, nodes...)
	g.nodes = slices.DeleteFunc(g.nodes, func(n *onnx.Node) bool { return slices.Contains(drop, n) })
	return res, nil
}
