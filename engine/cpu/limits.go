package cpu

import (
	"fmt"

	"github.com/edgectl/edgectl/format/hfconfig"
)

// Bounds on the sizes a model file declares. They are checked before
// anything is allocated from them: a hostile or corrupt config.json, GGUF
// header or .h1b header must fail with an error naming the field, never
// with `panic: makeslice` or an out-of-memory kill. The bounds are far
// beyond every published model (Llama 3.1 405B: hidden 16384, FFN 53248,
// 126 layers, 128 heads, vocabulary 128256; Gemma 3: vocabulary 262208),
// and the tensors the file holds are checked against the same sizes.
// The numbers are hfconfig.DefaultLimits, the one table of them, applied
// here to every format (config.json, GGUF metadata, the .h1b header).
var (
	maxHidden  = hfconfig.DefaultLimits.HiddenSize
	maxFFN     = hfconfig.DefaultLimits.IntermediateSize
	maxLayers  = hfconfig.DefaultLimits.Layers
	maxHeads   = hfconfig.DefaultLimits.Heads
	maxHeadDim = hfconfig.DefaultLimits.HeadDim
	maxVocab   = hfconfig.DefaultLimits.VocabSize
)

const (
	// tensorsPerLayer is the fewest tensors one transformer block has
	// (two norms and seven matrices): a file declaring more layers than
	// its tensors can fill is refused before the layer table is made.
	tensorsPerLayer = 9
)

// dimNames are a format's names for the sizes arch holds, for errors.
type dimNames struct {
	hidden, ffn, layers, heads, kvHeads, headDim, vocab, ctx string
}

// hfDimNames are config.json's keys (under text_config for multimodal
// wrappers).
func hfDimNames(c *hfconfig.Config) dimNames {
	prefix := ""
	if c.Text() != c {
		prefix = "text_config."
	}
	return dimNames{
		hidden: prefix + "hidden_size", ffn: prefix + "intermediate_size", layers: prefix + "num_hidden_layers",
		heads: prefix + "num_attention_heads", kvHeads: prefix + "num_key_value_heads",
		headDim: prefix + "head_dim (or hidden_size / num_attention_heads)", vocab: prefix + "vocab_size",
		ctx: prefix + "max_position_embeddings",
	}
}

// ggufDimNames are a GGUF file's metadata keys for architecture an.
func ggufDimNames(an string) dimNames {
	return dimNames{
		hidden: an + ".embedding_length", ffn: an + ".feed_forward_length", layers: an + ".block_count",
		heads: an + ".attention.head_count", kvHeads: an + ".attention.head_count_kv",
		headDim: an + ".attention.key_length (or embedding_length / head_count)", vocab: "token_embd.weight rows",
		ctx: an + ".context_length",
	}
}

// h1bDimNames are the .h1b header's fields.
var h1bDimNames = dimNames{
	hidden: "hidden_size", ffn: "intermediate_size", layers: "num_layers", heads: "num_heads",
	kvHeads: "num_kv_heads", headDim: "hidden_size / num_heads", vocab: "vocab_size", ctx: "max_seq_len",
}

// checkDims validates a's sizes, as read from file (named by names), and
// that the file's tensors (count) can hold its layers. The message says
// which field is wrong and how to fix it, in one line.
func checkDims(a *arch, file string, names dimNames, tensors int) error {
	for _, d := range []struct {
		v    int
		name string
		max  int
	}{
		{a.hidden, names.hidden, maxHidden}, {a.ffn, names.ffn, maxFFN}, {a.layers, names.layers, maxLayers},
		{a.heads, names.heads, maxHeads}, {a.kvHeads, names.kvHeads, maxHeads}, {a.headDim, names.headDim, maxHeadDim},
		{a.vocab, names.vocab, maxVocab},
	} {
		if d.v <= 0 || d.v > d.max {
			return fmt.Errorf("%s: %s is %d, outside the sane range 1..%d; the file is corrupt or hostile (fix the value to the model's real size, which its tensors show)",
				file, d.name, d.v, d.max)
		}
	}
	if a.heads%a.kvHeads != 0 {
		return fmt.Errorf("%s: %s %d is not a multiple of %s %d; fix one of them to the model's real head counts",
			file, names.heads, a.heads, names.kvHeads, a.kvHeads)
	}
	if a.ctx < 0 {
		return fmt.Errorf("%s: %s is %d; a context length cannot be negative (set it to the model's trained length, or remove it)", file, names.ctx, a.ctx)
	}
	if tensors >= 0 && a.layers > tensors/tensorsPerLayer {
		return fmt.Errorf("%s: %s is %d but the model holds only %d tensors (a layer needs at least %d); fix the value to the number of layers the checkpoint has",
			file, names.layers, a.layers, tensors, tensorsPerLayer)
	}
	return nil
}
