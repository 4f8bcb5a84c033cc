package hflayout

// Kind is the role of a tensor in a decoder-only language model.
type Kind string

// Model-level kinds.
const (
	Embedding Kind = "embedding"
	FinalNorm Kind = "final_norm"
	LMHead    Kind = "lm_head"
)

// Per-layer kinds.
const (
	InputNorm    Kind = "input_norm"
	PostAttnNorm Kind = "post_attn_norm"
	PreFFNNorm   Kind = "pre_ffn_norm"  // Gemma 2/3
	PostFFNNorm  Kind = "post_ffn_norm" // Gemma 2/3
	QNorm        Kind = "q_norm"        // Qwen3, Gemma 3
	KNorm        Kind = "k_norm"
	AttnSubNorm  Kind = "attn_sub_norm" // BitNet
	FFNSubNorm   Kind = "ffn_sub_norm"
	Q            Kind = "q"
	K            Kind = "k"
	V            Kind = "v"
	O            Kind = "o"
	Gate         Kind = "gate"
	Up           Kind = "up"
	Down         Kind = "down"
	QBias        Kind = "q_bias"
	KBias        Kind = "k_bias"
	VBias        Kind = "v_bias"
	OBias        Kind = "o_bias"
)

// modelTensors are the model-level names after the prefix (the head has
// its own name per root).
var modelTensors = map[Kind]string{
	Embedding: "embed_tokens.weight",
	FinalNorm: "norm.weight",
}

// layerTensors are the per-layer names after "PREFIX layers.N.".
var layerTensors = map[Kind]string{
	InputNorm:    "input_layernorm.weight",
	PostAttnNorm: "post_attention_layernorm.weight",
	PreFFNNorm:   "pre_feedforward_layernorm.weight",
	PostFFNNorm:  "post_feedforward_layernorm.weight",
	QNorm:        "self_attn.q_norm.weight",
	KNorm:        "self_attn.k_norm.weight",
	AttnSubNorm:  "self_attn.attn_sub_norm.weight",
	FFNSubNorm:   "mlp.ffn_sub_norm.weight",
	Q:            "self_attn.q_proj.weight",
	K:            "self_attn.k_proj.weight",
	V:            "self_attn.v_proj.weight",
	O:            "self_attn.o_proj.weight",
	Gate:         "mlp.gate_proj.weight",
	Up:           "mlp.up_proj.weight",
	Down:         "mlp.down_proj.weight",
	QBias:        "self_attn.q_proj.bias",
	KBias:        "self_attn.k_proj.bias",
	VBias:        "self_attn.v_proj.bias",
	OBias:        "self_attn.o_proj.bias",
}

// kindOfSuffix inverts layerTensors.
var kindOfSuffix = func() map[string]Kind {
	m := make(map[string]Kind, len(layerTensors))
	for k, s := range layerTensors {
		m[s] = k
	}
	return m
}()
