package cpu

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/safetensors"
)

// writeRandomLlama writes a small random checkpoint of a llama-family
// model_type in dtype, with the family's extra tensors (qwen2 biases,
// qwen3 q/k norms).
func writeRandomLlama(t *testing.T, dir, modelType string, dtype safetensors.DType) {
	t.Helper()
	const H, F, L, heads, kv, hd, V = 64, 160, 2, 4, 2, 24, 6400
	cfg := map[string]any{"model_type": modelType, "hidden_size": H, "intermediate_size": F, "num_hidden_layers": L,
		"num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": hd, "vocab_size": V,
		"max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": false,
		"eos_token_id": 2}
	b, _ := json.Marshal(cfg)
	must(t, os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644))
	rng := rand.New(rand.NewPCG(9, uint64(len(modelType))))
	var srcs []safetensors.Source
	add := func(name string, scale float64, shape ...int64) {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
			if scale == 0 {
				v[i] = float32(1 + 0.2*rng.NormFloat64())
			}
		}
		raw := make([]byte, dtype.ByteSize(n))
		must(t, safetensors.EncodeFloat32(raw, dtype, v))
		srcs = append(srcs, safetensors.Source{Name: name, DType: dtype, Shape: shape, WriteTo: safetensors.FromBytes(raw)})
	}
	add("model.embed_tokens.weight", 1, V, H)
	add("lm_head.weight", 0.2, V, H)
	add("model.norm.weight", 0, H)
	for l := range L {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", 0, H)
		add(p+"post_attention_layernorm.weight", 0, H)
		add(p+"self_attn.q_proj.weight", 0.15, heads*hd, H)
		add(p+"self_attn.k_proj.weight", 0.15, kv*hd, H)
		add(p+"self_attn.v_proj.weight", 0.15, kv*hd, H)
		add(p+"self_attn.o_proj.weight", 0.15, H, heads*hd)
		add(p+"mlp.gate_proj.weight", 0.15, F, H)
		add(p+"mlp.up_proj.weight", 0.15, F, H)
		add(p+"mlp.down_proj.weight", 0.1, H, F)
		if modelType == "qwen2" {
			add(p+"self_attn.q_proj.bias", 0.1, heads*hd)
			add(p+"self_attn.k_proj.bias", 0.1, kv*hd)
			add(p+"self_attn.v_proj.bias", 0.1, kv*hd)
		}
		if modelType == "qwen3" {
			add(p+"self_attn.q_norm.weight", 0, hd)
			add(p+"self_attn.k_norm.weight", 0, hd)
		}
	}
	must(t, writeFile(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error { return safetensors.Write(w, nil, srcs) }))
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"} {
		copyFile(t, filepath.Join(qwenTok, f), filepath.Join(dir, f))
	}
}

// TestFamiliesMatchFloat64Reference covers qwen2 (qkv bias, BF16) and qwen3
// (q/k norm, F16, head_dim ≠ hidden/heads, untied head) against the float64
// reference forward pass.
func TestFamiliesMatchFloat64Reference(t *testing.T) {
	for _, c := range []struct {
		typ string
		dt  safetensors.DType
	}{{"qwen2", safetensors.BF16}, {"qwen3", safetensors.F16}, {"llama", safetensors.F32}} {
		t.Run(c.typ, func(t *testing.T) {
			dir := t.TempDir()
			writeRandomLlama(t, dir, c.typ, c.dt)
			m := loadModel(t, dir)
			ref := loadRef(t, dir)
			ids := m.tok.Encode("The quick brown fox jumps over the lazy dog", false)
			want := ref.logits(ids)
			st := newState(m)
			got, err := st.forward(context.Background(), ids[:5])
			must(t, err)
			if e := maxRelErr(got, want[4]); e > 1e-4 {
				t.Fatalf("prefill: max relative error %.3g", e)
			}
			for i := 5; i < len(ids); i++ {
				got, err := st.forward(context.Background(), ids[i:i+1])
				must(t, err)
				if e := maxRelErr(got, want[i]); e > 1e-4 {
					t.Fatalf("position %d: max relative error %.3g", i, e)
				}
			}
		})
	}
}

// TestQwen3ChatGenerate runs a chat request through the template.
func TestQwen3ChatGenerate(t *testing.T) {
	dir := t.TempDir()
	writeRandomLlama(t, dir, "qwen3", safetensors.F16)
	m := loadModel(t, dir)
	if m.Info().ChatTemplate == "" {
		t.Fatal("chat template not loaded")
	}
	s, _ := m.NewSession()
	res, err := s.Generate(context.Background(), engine.Request{Messages: []engine.Message{{Role: "user", Content: "Hello world!"}},
		AddGenerationPrompt: true, MaxTokens: 4, Sampling: greedy()}, func(engine.Token) error { return nil })
	must(t, err)
	want := len(m.tok.Encode("<|im_start|>user\nHello world!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", false))
	if res.PromptTokens != want {
		t.Errorf("prompt tokens %d, want %d (the rendered template)", res.PromptTokens, want)
	}
}

// TestGGUFLlamaInterleavedRoPE writes TinyStories to GGUF F32 with q/k rows
// permuted as llama.cpp's converter does (quant.PermuteQK) and checks the
// engine's interleaved RoPE gives the same greedy text as the checkpoint.
func TestGGUFLlamaInterleavedRoPE(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ts.gguf")
	writeTinyStoriesGGUF(t, path, func(string) gguf.Type { return gguf.TypeF32 })
	a, _ := generate(t, loadModel(t, tinyStories), engine.Request{Prompt: "Once upon a time", MaxTokens: 30, Sampling: greedy()})
	gm := loadModel(t, path)
	if !gm.arch.ropeInterleaved || gm.info.Format != "gguf" {
		t.Fatalf("%+v", gm.arch)
	}
	b, _ := generate(t, gm, engine.Request{Prompt: "Once upon a time", MaxTokens: 30, Sampling: greedy()})
	if a != b {
		t.Fatalf("gguf %q\nsafetensors %q", b, a)
	}
}
