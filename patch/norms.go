package patch

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/hflayout"
)

// Norm is a normalization weight an architecture expects.
type Norm struct {
	Name  string
	Shape []int64
	// Layer is the decoder layer it belongs to, -1 for model-level norms.
	Layer int
	// Fill is the identity value: 1.0 for x·w norms, 0.0 for Gemma's x·(1+w).
	Fill float32
}

// ExpectedNorms lists the norm tensors the architecture of cfg defines,
// named with the checkpoint's prefix. Families:
//   - llama, mistral, qwen2, phi3, internlm2-style: model.norm, per layer
//     input_layernorm and post_attention_layernorm, all [hidden]
//   - qwen3 (and qwen3_moe, qwen3_next): adds self_attn.q_norm/k_norm [head_dim]
//   - gemma2/gemma3: adds pre_/post_feedforward_layernorm [hidden]; Gemma
//     stores norms as w in x·(1+w), so the identity fill is 0, not 1
//   - bitnet: adds self_attn.attn_sub_norm [hidden] and mlp.ffn_sub_norm [ffn]
func ExpectedNorms(cfg *hfconfig.Config, prefix string) ([]Norm, error) {
	c := cfg.Text()
	if c.HiddenSize <= 0 || c.NumHiddenLayers <= 0 {
		return nil, fmt.Errorf("%s: hidden_size and num_hidden_layers are needed to know which norms to expect", cfg.Path)
	}
	mt := strings.ToLower(c.ModelType)
	if mt == "" {
		mt = strings.ToLower(cfg.ModelType)
	}
	fill := float32(1)
	gemma := strings.HasPrefix(mt, "gemma")
	if gemma {
		fill = 0
	}
	h := int64(c.HiddenSize)
	lay := hflayout.WithPrefix(prefix)
	out := []Norm{{Name: lay.Name(hflayout.FinalNorm), Shape: []int64{h}, Layer: -1, Fill: fill}}
	for l := range c.NumHiddenLayers {
		add := func(k hflayout.Kind, n int64) {
			out = append(out, Norm{Name: lay.LayerName(l, k), Shape: []int64{n}, Layer: l, Fill: fill})
		}
		add(hflayout.InputNorm, h)
		add(hflayout.PostAttnNorm, h)
		switch {
		case strings.HasPrefix(mt, "qwen3"):
			hd := int64(c.HeadDimension())
			add(hflayout.QNorm, hd)
			add(hflayout.KNorm, hd)
		case mt == "gemma3" || mt == "gemma3_text":
			add(hflayout.PreFFNNorm, h)
			add(hflayout.PostFFNNorm, h)
			hd := int64(c.HeadDimension())
			add(hflayout.QNorm, hd)
			add(hflayout.KNorm, hd)
		case mt == "gemma2":
			add(hflayout.PreFFNNorm, h)
			add(hflayout.PostFFNNorm, h)
		case mt == "bitnet":
			add(hflayout.AttnSubNorm, h)
			add(hflayout.FFNSubNorm, int64(c.IntermediateSize))
		}
	}
	return out, nil
}

// Missing returns the expected norms absent from have.
func Missing(expected []Norm, have map[string]bool) []Norm {
	var out []Norm
	for _, n := range expected {
		if !have[n.Name] {
			out = append(out, n)
		}
	}
	return out
}

// ParseExtraNorm parses a --name argument: NAME or NAME=DIM[xDIM…]. Without
// a shape the norm is [hidden]. Its layer is the decoder layer of lay it
// names, -1 for any other name.
func ParseExtraNorm(arg string, hidden int, lay hflayout.Layout) (Norm, error) {
	name, shape, hasShape := strings.Cut(arg, "=")
	if name == "" {
		return Norm{}, fmt.Errorf("--name %q: empty tensor name", arg)
	}
	layer, _, _ := lay.LayerOf(name)
	n := Norm{Name: name, Layer: layer, Fill: 1, Shape: []int64{int64(hidden)}}
	if hasShape {
		n.Shape = nil
		for _, d := range strings.Split(shape, "x") {
			v, err := strconv.ParseInt(d, 10, 64)
			if err != nil || v <= 0 {
				return Norm{}, fmt.Errorf("--name %q: shape %q is not DIM or DIMxDIM", arg, shape)
			}
			n.Shape = append(n.Shape, v)
		}
	}
	return n, nil
}

// sortNorms orders norms by layer then name, for deterministic output.
func sortNorms(ns []Norm) {
	sort.SliceStable(ns, func(i, j int) bool {
		if ns[i].Layer != ns[j].Layer {
			return ns[i].Layer < ns[j].Layer
		}
		return ns[i].Name < ns[j].Name
	})
}
