package quant

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/internal/errkind"
)

// dims are the decoder dimensions from config.json.
type dims struct {
	hidden, inter, layers, heads, kvHeads, headDim, vocab, ctx int
	eps, theta                                                 float64
	act                                                        string
	tied                                                       bool
}

// layout is the source's tensors by role.
type layout struct {
	hf     hflayout.Layout     // the checkpoint's naming
	model  map[string]string   // embedding, final_norm, lm_head → HF name
	layers []map[string]string // kind → HF name
}

// loadModel reads the dims and sorts every tensor into a role. Tensors
// outside the llama/bitnet decoder are an error naming them.
func (p *packer) loadModel() (*layout, error) {
	s := p.src
	if s.cfg == nil {
		return nil, errkind.Errorf(errkind.Input, "%s has no config.json: %s needs the model's dimensions (put config.json beside the weights)", s.dir, p.opts.Format)
	}
	c := s.cfg
	d := dims{hidden: c.HiddenSize, inter: c.IntermediateSize, layers: c.NumHiddenLayers, heads: c.NumAttentionHeads,
		kvHeads: c.KVHeads(), headDim: c.HeadDimension(), vocab: c.VocabSize, ctx: c.MaxPositionEmbeddings,
		eps: c.RMSNormEps, theta: c.RopeTheta, act: c.HiddenAct}
	if d.hidden <= 0 || d.inter <= 0 || d.layers <= 0 || d.heads <= 0 || d.vocab <= 0 {
		return nil, errkind.Errorf(errkind.Input, "%s: config.json lacks hidden_size, intermediate_size, num_hidden_layers, num_attention_heads or vocab_size", s.dir)
	}
	if d.eps == 0 {
		d.eps = 1e-5
	}
	if d.theta == 0 {
		d.theta = 10000
		if s.arch == "bitnet" {
			d.theta = 500000
		}
	}
	if d.ctx == 0 {
		d.ctx = 4096
	}
	names := s.names()
	hf, err := hflayout.Detect(names)
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "%s: %v", p.opts.Input, err)
	}
	lay := &layout{hf: hf, model: map[string]string{}, layers: make([]map[string]string, d.layers)}
	for i := range lay.layers {
		lay.layers[i] = map[string]string{}
	}
	var unknown []string
	for _, name := range names {
		layer, kind, ok, skip := classify(hf, name)
		switch {
		case skip:
			continue
		case !ok:
			unknown = append(unknown, name)
			continue
		case layer < 0:
			lay.model[kind] = name
		case layer >= d.layers:
			return nil, errkind.Errorf(errkind.Input, "tensor %q is layer %d, but config.json says num_hidden_layers = %d", name, layer, d.layers)
		default:
			lay.layers[layer][kind] = name
		}
	}
	nLinear := 0
	for _, l := range lay.layers {
		for _, k := range LinearKinds {
			if _, ok := l[k]; ok {
				nLinear++
			}
		}
	}
	if nLinear == 0 {
		return nil, errkind.Errorf(errkind.Input, "%s: no linear weights (%slayers.N.{self_attn,mlp}.*_proj.weight) found: nothing to pack", p.opts.Input, hf.Prefix)
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		more := ""
		if len(unknown) > 3 {
			more = fmt.Sprintf(" and %d more", len(unknown)-3)
			unknown = unknown[:3]
		}
		return nil, errkind.Errorf(errkind.Input, "tensor %s%s is not part of a llama/bitnet decoder; quant pack handles llama and bitnet checkpoints", strings.Join(quoteAll(unknown), ", "), more)
	}
	for l, m := range lay.layers {
		for _, k := range append([]string{"input_norm", "post_attn_norm"}, LinearKinds...) {
			if _, ok := m[k]; !ok {
				return nil, errkind.Errorf(errkind.Input, "layer %d has no %s tensor (%s)", l, k, hf.LayerName(l, hflayout.Kind(k)))
			}
		}
	}
	// hflayout's tied rule: a tied checkpoint saved through safetensors'
	// dedup may keep the shared matrix only as the head.
	emb, err := hf.StoredEmbedding(c.Tied())
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "%s: %v", p.opts.Input, err)
	}
	if emb != lay.model["embedding"] {
		lay.model["embedding"] = emb
		delete(lay.model, "lm_head")
	}
	if _, ok := lay.model["final_norm"]; !ok {
		return nil, errkind.Errorf(errkind.Input, "%s: tensor %q is missing", p.opts.Input, hf.Name(hflayout.FinalNorm))
	}
	head, err := hf.StoredHead(c.Tied())
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "%s: %v", p.opts.Input, err)
	}
	d.tied = head == ""
	p.dims = d
	if s.arch == "" {
		p.res.Arch = "llama"
	} else {
		p.res.Arch = s.arch
	}
	return lay, nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// expectShape is the [out, in] a projection must have.
func (d dims) expectShape(kind string) (rows, k int) {
	switch kind {
	case "q":
		return d.heads * d.headDim, d.hidden
	case "k", "v":
		return d.kvHeads * d.headDim, d.hidden
	case "o":
		return d.hidden, d.heads * d.headDim
	case "gate", "up":
		return d.inter, d.hidden
	case "down":
		return d.hidden, d.inter
	}
	return 0, 0
}

func (p *packer) checkShape(l *linear, kind string) error {
	rows, k := p.dims.expectShape(kind)
	if l.rows != rows || l.k != k {
		return errkind.Errorf(errkind.Input, "tensor %q holds [%d, %d] weights, but config.json implies [%d, %d] for %s", l.name, l.rows, l.k, rows, k, kind)
	}
	return nil
}

// ggufLinearNames maps a projection kind to its GGUF tensor stem.
var ggufLinearNames = map[string]string{
	"q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
	"gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down",
	"input_norm": "attn_norm", "post_attn_norm": "ffn_norm",
	"attn_sub_norm": "attn_sub_norm", "ffn_sub_norm": "ffn_sub_norm",
	"q_bias": "attn_q", "k_bias": "attn_k", "v_bias": "attn_v", "o_bias": "attn_output",
}

// GGUFName maps an HF llama/bitnet tensor name to its GGUF name
// (token_embd.weight, blk.N.attn_q.weight, …); ok is false for tensors
// without a GGUF counterpart.
func GGUFName(hf string) (string, bool) {
	layer, k, ok := hflayout.Parse(hf)
	if !ok || !packKinds[k] {
		return "", false
	}
	switch k {
	case hflayout.Embedding:
		return "token_embd.weight", true
	case hflayout.FinalNorm:
		return "output_norm.weight", true
	case hflayout.LMHead:
		return "output.weight", true
	}
	suffix := ".weight"
	if strings.HasSuffix(string(k), "_bias") {
		suffix = ".bias"
	}
	return fmt.Sprintf("blk.%d.%s%s", layer, ggufLinearNames[string(k)], suffix), true
}

// PermuteQK is the row order llama.cpp's convert_hf_to_gguf.py gives Q and
// K of `llama` models: within each head, HF's rotate-half halves
// (i, i+hd/2) become interleaved pairs (2i, 2i+1), which is what
// llama.cpp's normal (non-NeoX) RoPE expects. It returns order with
// order[j] = the HF row stored at GGUF row j. BitNet in llama.cpp uses
// NeoX RoPE and is not permuted.
func PermuteQK(rows, heads int) []int {
	hd := rows / heads
	order := make([]int, rows)
	for h := 0; h < heads; h++ {
		for i := 0; i < hd/2; i++ {
			for s := 0; s < 2; s++ {
				order[h*hd+2*i+s] = h*hd + s*hd/2 + i
			}
		}
	}
	return order
}

func modelName(input string) string {
	return filepath.Base(strings.TrimSuffix(filepath.Clean(input), ".safetensors"))
}
