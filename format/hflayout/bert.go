package hflayout

import (
	"fmt"
	"strconv"
	"strings"
)

// BERT-family encoders (BertModel as all-MiniLM-L6-v2, bge-small and
// e5-small save it, and the "bert." module of BertFor* checkpoints): the
// same resolver, so every reader spells these names in one place.

// Encoder kinds, beside the decoder's (Q, K, V and their biases, O, OBias,
// Up, Down are shared).
const (
	WordEmbedding      Kind = "word_embedding"
	PositionEmbedding  Kind = "position_embedding"
	TokenTypeEmbedding Kind = "token_type_embedding"
	EmbedNorm          Kind = "embed_norm"
	EmbedNormBias      Kind = "embed_norm_bias"
	AttnOutNorm        Kind = "attn_out_norm" // post-attention LayerNorm
	AttnOutNormBias    Kind = "attn_out_norm_bias"
	UpBias             Kind = "up_bias" // BERT's intermediate.dense bias
	DownBias           Kind = "down_bias"
	OutNorm            Kind = "out_norm" // post-FFN LayerNorm
	OutNormBias        Kind = "out_norm_bias"
)

// bertPrefixes are where checkpoints keep the encoder: BertModel at the
// root, BertFor* under "bert.", in this order of preference.
var bertPrefixes = []string{"", "bert."}

var bertModelTensors = map[Kind]string{
	WordEmbedding:      "embeddings.word_embeddings.weight",
	PositionEmbedding:  "embeddings.position_embeddings.weight",
	TokenTypeEmbedding: "embeddings.token_type_embeddings.weight",
	EmbedNorm:          "embeddings.LayerNorm.weight",
	EmbedNormBias:      "embeddings.LayerNorm.bias",
}

var bertLayerTensors = map[Kind]string{
	Q:               "attention.self.query.weight",
	QBias:           "attention.self.query.bias",
	K:               "attention.self.key.weight",
	KBias:           "attention.self.key.bias",
	V:               "attention.self.value.weight",
	VBias:           "attention.self.value.bias",
	O:               "attention.output.dense.weight",
	OBias:           "attention.output.dense.bias",
	AttnOutNorm:     "attention.output.LayerNorm.weight",
	AttnOutNormBias: "attention.output.LayerNorm.bias",
	Up:              "intermediate.dense.weight",
	UpBias:          "intermediate.dense.bias",
	Down:            "output.dense.weight",
	DownBias:        "output.dense.bias",
	OutNorm:         "output.LayerNorm.weight",
	OutNormBias:     "output.LayerNorm.bias",
}

// BertLayout is one encoder checkpoint's naming: its module prefix, and
// whether its LayerNorms use the TF-era gamma/beta names.
type BertLayout struct {
	Prefix    string
	gammaBeta bool
}

// DetectBert finds the encoder's prefix from its word embeddings.
func DetectBert(names []string) (BertLayout, error) {
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	for _, p := range bertPrefixes {
		if have[p+bertModelTensors[WordEmbedding]] {
			l := BertLayout{Prefix: p}
			l.gammaBeta = !have[p+bertModelTensors[EmbedNorm]] && have[p+"embeddings.LayerNorm.gamma"]
			return l, nil
		}
	}
	example := ""
	if len(names) > 0 {
		example = fmt.Sprintf(" (its tensors are named like %s)", quote(names[0]))
	}
	return BertLayout{}, fmt.Errorf("no BERT encoder tensors: looked for %s at the root and under bert.%s; only BertModel checkpoints in Hugging Face naming can be read",
		bertModelTensors[WordEmbedding], example)
}

// Name is a model-level encoder tensor's name.
func (l BertLayout) Name(k Kind) string { return l.spell(l.Prefix + bertModelTensors[k]) }

// LayerName is layer i's tensor of kind k.
func (l BertLayout) LayerName(i int, k Kind) string {
	return l.spell(l.Prefix + "encoder.layer." + strconv.Itoa(i) + "." + bertLayerTensors[k])
}

// spell turns LayerNorm.weight/bias into gamma/beta for TF-era files.
func (l BertLayout) spell(name string) string {
	if !l.gammaBeta || !strings.Contains(name, "LayerNorm.") {
		return name
	}
	name = strings.Replace(name, "LayerNorm.weight", "LayerNorm.gamma", 1)
	return strings.Replace(name, "LayerNorm.bias", "LayerNorm.beta", 1)
}
