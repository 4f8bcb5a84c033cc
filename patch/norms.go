package patch

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/format/hfconfig"
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

var embedRe = regexp.MustCompile(`^(.*?)embed_tokens\.weight$`)

// Prefix finds the module prefix of the language model ("model.",
// "model.language_model.", "language_model.model.") from the embedding's
// tensor name; "model." when there is none.
func Prefix(names []string) string {
	for _, n := range names {
		if m := embedRe.FindStringSubmatch(n); m != nil {
			return m[1]
		}
	}
	return "model."
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
	out := []Norm{{Name: prefix + "norm.weight", Shape: []int64{h}, Layer: -1, Fill: fill}}
	for l := range c.NumHiddenLayers {
		lp := fmt.Sprintf("%slayers.%d.", prefix, l)
		add := func(name string, n int64) {
			out = append(out, Norm{Name: lp + name, Shape: []int64{n}, Layer: l, Fill: fill})
		}
		add("input_layernorm.weight", h)
		add("post_attention_layernorm.weight", h)
		switch {
		case strings.HasPrefix(mt, "qwen3"):
			hd := int64(c.HeadDimension())
			add("self_attn.q_norm.weight", hd)
			add("self_attn.k_norm.weight", hd)
		case mt == "gemma3" || mt == "gemma3_text":
			add("pre_feedforward_layernorm.weight", h)
			add("post_feedforward_layernorm.weight", h)
			hd := int64(c.HeadDimension())
			add("self_attn.q_norm.weight", hd)
			add("self_attn.k_norm.weight", hd)
		case mt == "gemma2":
			add("pre_feedforward_layernorm.weight", h)
			add("post_feedforward_layernorm.weight", h)
		case mt == "bitnet":
			add("self_attn.attn_sub_norm.weight", h)
			add("mlp.ffn_sub_norm.weight", int64(c.IntermediateSize))
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
// a shape the norm is [hidden].
func ParseExtraNorm(arg string, hidden int) (Norm, error) {
	name, shape, hasShape := strings.Cut(arg, "=")
	if name == "" {
		return Norm{}, fmt.Errorf("--name %q: empty tensor name", arg)
	}
	n := Norm{Name: name, Layer: layerOf(name), Fill: 1, Shape: []int64{int64(hidden)}}
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

var layerRe = regexp.MustCompile(`layers\.(\d+)\.`)

func layerOf(name string) int {
	if m := layerRe.FindStringSubmatch(name); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return -1
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
