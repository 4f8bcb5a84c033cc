// Package testmodel writes small Hugging Face checkpoints for tests and
// benchmarks: a config.json for the chosen family, deterministic weights in
// safetensors (optionally sharded, with an index), and the fixture
// tokenizer when asked. Real files through the real writer, so tests
// exercise what users' checkpoints look like.
package testmodel

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgectl/edgectl/format/safetensors"
)

// Spec describes the checkpoint to generate.
type Spec struct {
	ModelType  string // llama (default), qwen2, qwen3, gemma2, gemma3, bitnet
	Hidden     int    // default 64
	FFN        int    // default 2·Hidden
	Layers     int    // default 2
	Heads      int    // default 4
	KVHeads    int    // default Heads/2
	HeadDim    int    // default Hidden/Heads
	Vocab      int    // default 256
	DType      safetensors.DType
	Shards     int               // >1 writes model-0000i-of-0000n.safetensors + index
	Omit       func(string) bool // drop tensors whose name matches
	Config     map[string]any    // extra or overriding config.json keys
	TiedNoHead bool              // tied embeddings, no lm_head.weight
	// Prefix is the decoder's module prefix (default "model."), e.g.
	// "model.language_model." for a multimodal wrapper's layout; Head is
	// the LM head's name (default "lm_head.weight"). Weights are the same
	// whatever the naming: values are seeded by the "model." name.
	Prefix, Head string
}

func (s *Spec) defaults() {
	if s.ModelType == "" {
		s.ModelType = "llama"
	}
	if s.Hidden == 0 {
		s.Hidden = 64
	}
	if s.FFN == 0 {
		s.FFN = 2 * s.Hidden
	}
	if s.Layers == 0 {
		s.Layers = 2
	}
	if s.Heads == 0 {
		s.Heads = 4
	}
	if s.KVHeads == 0 {
		s.KVHeads = max(1, s.Heads/2)
	}
	if s.HeadDim == 0 {
		s.HeadDim = s.Hidden / s.Heads
	}
	if s.Vocab == 0 {
		s.Vocab = 256
	}
	if s.DType == "" {
		s.DType = safetensors.BF16
	}
	if s.Prefix == "" {
		s.Prefix = "model."
	}
	if s.Head == "" {
		s.Head = "lm_head.weight"
	}
}

// canonical is a tensor's name in the default naming, which seeds its values.
func (s Spec) canonical(name string) string {
	if name == s.Head {
		return "lm_head.weight"
	}
	if rest, ok := strings.CutPrefix(name, s.Prefix); ok {
		return "model." + rest
	}
	return name
}

// Tensor is a generated tensor's name and shape.
type Tensor struct {
	Name  string
	Shape []int64
}

// Tensors lists what the spec's architecture has, in layer order.
func (s Spec) Tensors() []Tensor {
	s.defaults()
	h, f, hd := int64(s.Hidden), int64(s.FFN), int64(s.HeadDim)
	q, kv := int64(s.Heads)*hd, int64(s.KVHeads)*hd
	out := []Tensor{{s.Prefix + "embed_tokens.weight", []int64{int64(s.Vocab), h}}}
	gemma := strings.HasPrefix(s.ModelType, "gemma")
	for l := range s.Layers {
		p := fmt.Sprintf("%slayers.%d.", s.Prefix, l)
		add := func(n string, shape ...int64) { out = append(out, Tensor{p + n, shape}) }
		add("input_layernorm.weight", h)
		add("self_attn.q_proj.weight", q, h)
		add("self_attn.k_proj.weight", kv, h)
		add("self_attn.v_proj.weight", kv, h)
		add("self_attn.o_proj.weight", h, q)
		if s.ModelType == "qwen2" {
			add("self_attn.q_proj.bias", q)
			add("self_attn.k_proj.bias", kv)
			add("self_attn.v_proj.bias", kv)
		}
		if s.ModelType == "qwen3" || s.ModelType == "gemma3" {
			add("self_attn.q_norm.weight", hd)
			add("self_attn.k_norm.weight", hd)
		}
		if s.ModelType == "bitnet" {
			add("self_attn.attn_sub_norm.weight", h)
			add("mlp.ffn_sub_norm.weight", f)
		}
		add("post_attention_layernorm.weight", h)
		if gemma {
			add("pre_feedforward_layernorm.weight", h)
			add("post_feedforward_layernorm.weight", h)
		}
		add("mlp.gate_proj.weight", f, h)
		add("mlp.up_proj.weight", f, h)
		add("mlp.down_proj.weight", h, f)
	}
	out = append(out, Tensor{s.Prefix + "norm.weight", []int64{h}})
	if !s.TiedNoHead && !gemma {
		out = append(out, Tensor{s.Head, []int64{int64(s.Vocab), h}})
	}
	return out
}

// Write generates the checkpoint into dir (created if needed).
func Write(dir string, s Spec) error {
	s.defaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := map[string]any{
		"architectures":           []string{archName(s.ModelType)},
		"model_type":              s.ModelType,
		"hidden_size":             s.Hidden,
		"intermediate_size":       s.FFN,
		"num_hidden_layers":       s.Layers,
		"num_attention_heads":     s.Heads,
		"num_key_value_heads":     s.KVHeads,
		"head_dim":                s.HeadDim,
		"vocab_size":              s.Vocab,
		"max_position_embeddings": 4096,
		"rms_norm_eps":            1e-6,
		"rope_theta":              10000.0,
		"hidden_act":              "silu",
		"tie_word_embeddings":     s.TiedNoHead || strings.HasPrefix(s.ModelType, "gemma"),
		"bos_token_id":            1,
		"eos_token_id":            2,
		"torch_dtype":             torchName(s.DType),
	}
	if s.ModelType == "bitnet" {
		cfg["hidden_act"] = "relu2"
	}
	for k, v := range s.Config {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var kept []Tensor
	for _, t := range s.Tensors() {
		if s.Omit == nil || !s.Omit(t.Name) {
			kept = append(kept, t)
		}
	}
	shards := max(1, s.Shards)
	groups := make([][]Tensor, shards)
	for i, t := range kept { // contiguous split keeps layers together
		groups[i*shards/len(kept)] = append(groups[i*shards/len(kept)], t)
	}
	weightMap := map[string]string{}
	var total int64
	for i, g := range groups {
		name := "model.safetensors"
		if shards > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards)
		}
		var srcs []safetensors.Source
		for _, t := range g {
			src := safetensors.Source{Name: t.Name, DType: s.DType, Shape: t.Shape}
			src.WriteTo = safetensors.FromBytes(Values(s.canonical(t.Name), src))
			srcs = append(srcs, src)
			weightMap[t.Name] = name
			total += src.Size()
		}
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := safetensors.Write(f, map[string]string{"format": "pt"}, srcs); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if shards > 1 {
		ix := safetensors.Index{Metadata: map[string]any{"total_size": total}, WeightMap: weightMap}
		b, _ := ix.Marshal()
		if err := os.WriteFile(filepath.Join(dir, safetensors.IndexName), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Values returns deterministic stored bytes for a tensor: norms are 1.0,
// other weights a smooth function of name and position, small enough for
// stable forward passes.
func Values(name string, src safetensors.Source) []byte {
	n := src.Size() / (src.DType.Bits() / 8)
	vals := make([]float32, n)
	seed := uint32(2166136261)
	for _, c := range []byte(name) {
		seed = (seed ^ uint32(c)) * 16777619
	}
	isNorm := strings.Contains(name, "norm")
	for i := range vals {
		if isNorm {
			vals[i] = 1
			continue
		}
		x := seed + uint32(i)*2654435761
		vals[i] = float32(math.Sin(float64(x%10007))) * 0.05
	}
	out := make([]byte, src.Size())
	if err := safetensors.EncodeFloat32(out, src.DType, vals); err != nil {
		panic(err)
	}
	return out
}

func archName(mt string) string {
	switch mt {
	case "qwen2":
		return "Qwen2ForCausalLM"
	case "qwen3":
		return "Qwen3ForCausalLM"
	case "gemma2":
		return "Gemma2ForCausalLM"
	case "gemma3", "gemma3_text":
		return "Gemma3ForCausalLM"
	case "bitnet":
		return "BitNetForCausalLM"
	}
	return "LlamaForCausalLM"
}

func torchName(d safetensors.DType) string {
	return map[safetensors.DType]string{safetensors.BF16: "bfloat16", safetensors.F16: "float16", safetensors.F32: "float32"}[d]
}

// SortedNames returns the tensor names of a spec, sorted.
func SortedNames(s Spec) []string {
	var out []string
	for _, t := range s.Tensors() {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// U64 is a helper for tests that hand-craft safetensors headers.
func U64(v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b
}
