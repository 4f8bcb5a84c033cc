package quant

import "testing"

// TestGGUFNameEveryPrefix: the GGUF name of a tensor does not depend on
// where the checkpoint keeps its decoder; tensors quant does not write have
// no GGUF name under any prefix.
func TestGGUFNameEveryPrefix(t *testing.T) {
	for _, c := range []struct{ prefix, head string }{
		{"model.", "lm_head.weight"},
		{"model.language_model.", "lm_head.weight"},
		{"language_model.model.", "language_model.lm_head.weight"},
		{"llm.model.", "llm.lm_head.weight"},
	} {
		for hf, want := range map[string]string{
			c.prefix + "embed_tokens.weight": "token_embd.weight",
			c.prefix + "norm.weight":         "output_norm.weight",
			c.head:                           "output.weight",
			c.prefix + "layers.3.self_attn.q_proj.weight":         "blk.3.attn_q.weight",
			c.prefix + "layers.0.self_attn.k_proj.bias":           "blk.0.attn_k.bias",
			c.prefix + "layers.12.mlp.ffn_sub_norm.weight":        "blk.12.ffn_sub_norm.weight",
			c.prefix + "layers.1.post_attention_layernorm.weight": "blk.1.ffn_norm.weight",
		} {
			if got, ok := GGUFName(hf); !ok || got != want {
				t.Errorf("GGUFName(%q) = %q, %v; want %q", hf, got, ok, want)
			}
		}
		for _, hf := range []string{c.prefix + "layers.0.self_attn.q_norm.weight", c.prefix + "layers.0.self_attn.rotary_emb.inv_freq", c.prefix + "vision_tower.weight"} {
			if got, ok := GGUFName(hf); ok {
				t.Errorf("GGUFName(%q) = %q; quant writes no such tensor", hf, got)
			}
		}
	}
}
