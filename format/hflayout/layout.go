// Package hflayout is edgectl's one resolver of Hugging Face decoder tensor
// names: where a checkpoint keeps its language model (the module prefix),
// what each layer's tensors are called, and which tensor is the LM head,
// with the tied fallback. Every reader of HF checkpoints (the CPU engine,
// quant, patch, pulsar2, doctor) asks it instead of spelling names itself,
// so they all accept the same checkpoints.
package hflayout

import (
	"fmt"
	"strings"

	"github.com/edgectl/edgectl/format/safetensors"
)

// roots are the places a checkpoint keeps its decoder, in the order they
// are preferred when a checkpoint has tensors under more than one.
var roots = []Layout{
	{Prefix: "model.", Head: "lm_head.weight"},                               // *ForCausalLM
	{Prefix: "model.language_model.", Head: "lm_head.weight"},                // transformers ≥ 4.52 multimodal wrappers (Gemma 3, Llava, Qwen2-VL)
	{Prefix: "language_model.model.", Head: "language_model.lm_head.weight"}, // older multimodal wrappers (Llava, InternVL)
	{Prefix: "llm.model.", Head: "llm.lm_head.weight"},                       // MiniCPM-V; ax-llm-build's extract_embed.py looks here
}

// Prefixes lists the module prefixes edgectl recognizes, in preference order.
func Prefixes() []string {
	out := make([]string, len(roots))
	for i, r := range roots {
		out[i] = r.Prefix
	}
	return out
}

// maxLayer bounds the layer index a name may carry: a hostile name with a
// 40-digit index is not a layer (configs are bounded far below this).
const maxLayer = 1 << 20

// maxQuoted bounds how much of a tensor name an error repeats.
const maxQuoted = 120

// Layout is one checkpoint's naming: its module prefix and LM head, and
// which of the model-level tensors it actually has (for the tied fallback).
type Layout struct {
	Prefix string // "model.", "model.language_model.", …
	Head   string // the LM head beside this prefix: "lm_head.weight", …

	hasEmbed, hasHead bool
}

// WithPrefix is the layout of a known prefix (for names the caller already
// resolved); an unknown prefix gets the plain "lm_head.weight" head.
func WithPrefix(prefix string) Layout {
	for _, r := range roots {
		if r.Prefix == prefix {
			return r
		}
	}
	return Layout{Prefix: prefix, Head: roots[0].Head}
}

// Detect resolves a checkpoint's layout from its tensor names: the first
// root (in Prefixes order) holding the embedding, else layer tensors, else
// the final norm, else the LM head. It fails when no name belongs to any
// known root.
func Detect(names []string) (Layout, error) {
	const (
		byEmbed = iota
		byLayers
		byNorm
		byHead
		ranks
	)
	var seen [ranks][]bool
	for i := range seen {
		seen[i] = make([]bool, len(roots))
	}
	for _, n := range names {
		for i, r := range roots {
			if n == r.Head {
				seen[byHead][i] = true
			}
			rest, ok := strings.CutPrefix(n, r.Prefix)
			switch {
			case !ok:
			case rest == modelTensors[Embedding]:
				seen[byEmbed][i] = true
			case strings.HasPrefix(rest, "layers."):
				seen[byLayers][i] = true
			case rest == modelTensors[FinalNorm]:
				seen[byNorm][i] = true
			}
		}
	}
	for rank := range seen {
		for i, ok := range seen[rank] {
			if ok {
				l := roots[i]
				l.hasEmbed, l.hasHead = seen[byEmbed][i], seen[byHead][i]
				return l, nil
			}
		}
	}
	example := ""
	if len(names) > 0 {
		example = fmt.Sprintf(" (its tensors are named like %s)", quote(names[0]))
	}
	return Layout{}, fmt.Errorf("no decoder tensors: looked for embed_tokens.weight, layers.N.* and norm.weight under %s%s; only decoder language-model checkpoints in Hugging Face naming can be read",
		strings.Join(Prefixes(), ", "), example)
}

// DetectCheckpoint is Detect over a checkpoint's tensors.
func DetectCheckpoint(ck *safetensors.Checkpoint) (Layout, error) {
	ts := ck.Tensors()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return Detect(names)
}

// Name is the tensor name of a model-level kind (Embedding, FinalNorm,
// LMHead); "" for a per-layer kind.
func (l Layout) Name(k Kind) string {
	if k == LMHead {
		return l.Head
	}
	if s, ok := modelTensors[k]; ok {
		return l.Prefix + s
	}
	return ""
}

// LayerName is the tensor name of a per-layer kind in layer i; "" for a
// model-level kind.
func (l Layout) LayerName(i int, k Kind) string {
	s, ok := layerTensors[k]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%slayers.%d.%s", l.Prefix, i, s)
}

// LayerOf splits a name inside a decoder layer of this layout into the
// layer index and the rest ("self_attn.q_proj.weight"); ok is false for
// any other name.
func (l Layout) LayerOf(name string) (layer int, rest string, ok bool) {
	s, found := strings.CutPrefix(name, l.Prefix+"layers.")
	if !found || l.Prefix == "" { // the zero Layout names nothing
		return -1, "", false
	}
	digits, rest, found := strings.Cut(s, ".")
	if !found || digits == "" || len(digits) > 7 || rest == "" {
		return -1, "", false
	}
	n := 0
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return -1, "", false
		}
		n = n*10 + int(c-'0')
	}
	if n > maxLayer || (len(digits) > 1 && digits[0] == '0') {
		return -1, "", false
	}
	return n, rest, true
}

// Role names a tensor of this layout: its layer (-1 for model-level
// tensors) and kind. ok is false for names outside the layout's known
// tensors (vision towers, rotary caches, quantization companions, …).
func (l Layout) Role(name string) (layer int, k Kind, ok bool) {
	switch {
	case l.Prefix == "": // the zero Layout names nothing
		return -1, "", false
	case name == l.Name(Embedding):
		return -1, Embedding, true
	case name == l.Name(FinalNorm):
		return -1, FinalNorm, true
	case name == l.Head:
		return -1, LMHead, true
	}
	layer, rest, ok := l.LayerOf(name)
	if !ok {
		return -1, "", false
	}
	k, ok = kindOfSuffix[rest]
	if !ok {
		return -1, "", false
	}
	return layer, k, true
}

// Parse names a tensor's role under whichever known root it belongs to,
// for callers that map single names without a checkpoint at hand.
func Parse(name string) (layer int, k Kind, ok bool) {
	for _, r := range roots {
		if layer, k, ok := r.Role(name); ok {
			return layer, k, true
		}
	}
	return -1, "", false
}
