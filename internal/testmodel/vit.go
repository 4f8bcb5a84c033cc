package testmodel

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgectl/edgectl/format/onnx"
)

// ViTSpec describes a SigLIP-shaped vision encoder as torch.onnx exports it
// at opset 12: pre-LayerNorm blocks with LayerNorm written out
// (ReduceMean/Sub/Pow/Sqrt/Div), GELU through Erf, attention as
// Reshape/Transpose/MatMul/Softmax, the head merge's shape computed with
// Shape/Gather/Unsqueeze/Concat, and a final LayerNorm.
type ViTSpec struct {
	Tokens, Hidden, Heads, Layers, MLP int     // defaults 256, 192, 3, 2, 4·Hidden
	Outlier                            float64 // the two outlier channels' value (default 400)
	Seed                               uint64
}

// SigLIPSpec is the encoder of issue 23: 256 tokens, hidden 192, 3 heads,
// 2 layers, two channels of the position embedding at ±400 so the residual
// stream carries SigLIP's ~hundreds-valued activations beside ~1 signals.
func SigLIPSpec() ViTSpec {
	return ViTSpec{Tokens: 256, Hidden: 192, Heads: 3, Layers: 2, Outlier: 400, Seed: 23}
}

// ViT builds the model: input "patch_embeds" [1, Tokens, Hidden] (float),
// output "last_hidden_state" of the same shape, weights random (seeded).
func ViT(s ViTSpec) *onnx.Model {
	if s.Tokens == 0 {
		s.Tokens = 256
	}
	if s.Hidden == 0 {
		s.Hidden = 192
	}
	if s.Heads == 0 {
		s.Heads = 3
	}
	if s.Layers == 0 {
		s.Layers = 2
	}
	if s.MLP == 0 {
		s.MLP = 4 * s.Hidden
	}
	if s.Outlier == 0 {
		s.Outlier = 400
	}
	b := &vitBuilder{g: &onnx.Graph{Name: "siglip_vision"}, rng: rand.New(rand.NewPCG(s.Seed, 0x5161))}
	n, h, hd := int64(s.Tokens), int64(s.Hidden), int64(s.Hidden/s.Heads)
	b.g.Input = []*onnx.ValueInfo{onnx.TensorValue("patch_embeds", onnx.Float, []int64{1, n, h})}
	b.g.Output = []*onnx.ValueInfo{onnx.TensorValue("last_hidden_state", onnx.Float, []int64{1, n, h})}

	pos := make([]float64, n*h)
	for i := range pos {
		pos[i] = 0.02 * b.rng.NormFloat64()
		switch i % int(h) {
		case 7:
			pos[i] += s.Outlier
		case int(h) - 20:
			pos[i] -= s.Outlier
		}
	}
	x := b.op("Add", "embeddings/Add", nil, "patch_embeds", b.init("embeddings.position_embedding", []int64{1, n, h}, pos))
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("encoder.layers.%d.", l)
		y := b.layerNorm(p+"layer_norm1", x, h)
		q := b.linear(p+"self_attn.q_proj", y, h, h)
		k := b.linear(p+"self_attn.k_proj", y, h, h)
		v := b.linear(p+"self_attn.v_proj", y, h, h)
		heads := b.constInt(p+"self_attn/heads_shape", []int64{4}, 1, n, int64(s.Heads), hd)
		qh := b.op("Transpose", p+"self_attn/q_t", []*onnx.Attribute{onnx.IntsAttr("perm", 0, 2, 1, 3)}, b.op("Reshape", p+"self_attn/q_r", nil, q, heads))
		kt := b.op("Transpose", p+"self_attn/k_t", []*onnx.Attribute{onnx.IntsAttr("perm", 0, 2, 3, 1)}, b.op("Reshape", p+"self_attn/k_r", nil, k, heads))
		vh := b.op("Transpose", p+"self_attn/v_t", []*onnx.Attribute{onnx.IntsAttr("perm", 0, 2, 1, 3)}, b.op("Reshape", p+"self_attn/v_r", nil, v, heads))
		scores := b.op("MatMul", p+"self_attn/scores", nil, qh, kt)
		scaled := b.op("Div", p+"self_attn/scale", nil, scores, b.constScalar(p+"self_attn/sqrt_d", math.Sqrt(float64(hd))))
		probs := b.op("Softmax", p+"self_attn/Softmax", []*onnx.Attribute{onnx.IntAttr("axis", 3)}, scaled)
		ctx := b.op("MatMul", p+"self_attn/context", nil, probs, vh)
		merged := b.op("Transpose", p+"self_attn/ctx_t", []*onnx.Attribute{onnx.IntsAttr("perm", 0, 2, 1, 3)}, ctx)
		// torch's merge: reshape(B, N, -1) with B and N read from the input
		shape := b.op("Shape", p+"self_attn/Shape", nil, x)
		bDim := b.op("Unsqueeze", p+"self_attn/Unsqueeze_b", []*onnx.Attribute{onnx.IntsAttr("axes", 0)},
			b.op("Gather", p+"self_attn/Gather_b", []*onnx.Attribute{onnx.IntAttr("axis", 0)}, shape, b.constInt(p+"self_attn/idx0", nil, 0)))
		nDim := b.op("Unsqueeze", p+"self_attn/Unsqueeze_n", []*onnx.Attribute{onnx.IntsAttr("axes", 0)},
			b.op("Gather", p+"self_attn/Gather_n", []*onnx.Attribute{onnx.IntAttr("axis", 0)}, shape, b.constInt(p+"self_attn/idx1", nil, 1)))
		mshape := b.op("Concat", p+"self_attn/Concat", []*onnx.Attribute{onnx.IntAttr("axis", 0)}, bDim, nDim, b.constInt(p+"self_attn/minus1", []int64{1}, -1))
		attn := b.linear(p+"self_attn.out_proj", b.op("Reshape", p+"self_attn/merge", nil, merged, mshape), h, h)
		x = b.op("Add", p+"residual1", nil, x, attn)

		y = b.layerNorm(p+"layer_norm2", x, h)
		f := b.linear(p+"mlp.fc1", y, h, int64(s.MLP))
		erf := b.op("Erf", p+"mlp/Erf", nil, b.op("Div", p+"mlp/Div", nil, f, b.constScalar(p+"mlp/sqrt2", math.Sqrt2)))
		gelu := b.op("Mul", p+"mlp/Mul_half", nil, b.op("Mul", p+"mlp/Mul", nil, f, b.op("Add", p+"mlp/Add_one", nil, erf, b.constScalar(p+"mlp/one", 1))), b.constScalar(p+"mlp/half", 0.5))
		x = b.op("Add", p+"residual2", nil, x, b.linear(p+"mlp.fc2", gelu, int64(s.MLP), h))
	}
	b.layerNorm("post_layernorm", x, h)
	b.g.Node[len(b.g.Node)-1].Output[0] = "last_hidden_state" // the final Add
	return &onnx.Model{IRVersion: 7, ProducerName: "edgectl-testmodel", ProducerVersion: "1",
		OpsetImport: []onnx.OpsetID{{Version: 12}}, Graph: b.g}
}

type vitBuilder struct {
	g   *onnx.Graph
	rng *rand.Rand
}

// op adds a node named name whose output is name's first output.
func (b *vitBuilder) op(typ, name string, attrs []*onnx.Attribute, in ...string) string {
	out := name + "_output_0"
	b.g.Node = append(b.g.Node, &onnx.Node{OpType: typ, Name: name, Input: in, Output: []string{out}, Attribute: attrs})
	return out
}

func (b *vitBuilder) init(name string, dims []int64, v []float64) string {
	b.g.Initializer = append(b.g.Initializer, onnx.FloatTensor(name, dims, v))
	return name
}

// constScalar is a Constant node, as torch writes scalar literals.
func (b *vitBuilder) constScalar(name string, v float64) string {
	out := name + "_output_0"
	b.g.Node = append(b.g.Node, &onnx.Node{OpType: "Constant", Name: name, Output: []string{out},
		Attribute: []*onnx.Attribute{onnx.TensorAttr("value", onnx.FloatTensor("", nil, []float64{v}))}})
	return out
}

func (b *vitBuilder) constInt(name string, dims []int64, v ...int64) string {
	out := name + "_output_0"
	b.g.Node = append(b.g.Node, &onnx.Node{OpType: "Constant", Name: name, Output: []string{out},
		Attribute: []*onnx.Attribute{onnx.TensorAttr("value", onnx.Int64Tensor("", dims, v))}})
	return out
}

func (b *vitBuilder) normal(n int64, std, mean float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = mean + std*b.rng.NormFloat64()
	}
	return v
}

// linear is x·W + b with W [in, out] (torch exports nn.Linear as MatMul
// with the transposed weight, then Add).
func (b *vitBuilder) linear(name, x string, in, out int64) string {
	w := b.init(name+".weight", []int64{in, out}, b.normal(in*out, 1/math.Sqrt(float64(in)), 0))
	bias := b.init(name+".bias", []int64{out}, b.normal(out, 0.02, 0))
	return b.op("Add", name+"/Add", nil, b.op("MatMul", name+"/MatMul", nil, x, w), bias)
}

// layerNorm is LayerNorm over the last axis written out, eps 1e-6.
func (b *vitBuilder) layerNorm(name, x string, h int64) string {
	axes := []*onnx.Attribute{onnx.IntsAttr("axes", -1)}
	mean := b.op("ReduceMean", name+"/ReduceMean", axes, x)
	d := b.op("Sub", name+"/Sub", nil, x, mean)
	v := b.op("ReduceMean", name+"/ReduceMean_1", axes, b.op("Pow", name+"/Pow", nil, d, b.constScalar(name+"/two", 2)))
	sd := b.op("Sqrt", name+"/Sqrt", nil, b.op("Add", name+"/Add_eps", nil, v, b.constScalar(name+"/eps", 1e-6)))
	n := b.op("Div", name+"/Div", nil, d, sd)
	g := b.op("Mul", name+"/Mul", nil, n, b.init(name+".weight", []int64{h}, b.normal(h, 0.1, 1)))
	return b.op("Add", name+"/Add", nil, g, b.init(name+".bias", []int64{h}, b.normal(h, 0.02, 0)))
}
