package quant

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/format/safetensors"
)

// tinyModel describes a generated checkpoint: real files on disk, small
// enough that every test runs in milliseconds.
type tinyModel struct {
	arch                                  string // "bitnet" or "llama"
	hidden, inter, layers, heads, kv, voc int
	dtype                                 safetensors.DType
	tied                                  bool
	// weights[name] = HF [rows, k] values; codes[name] = their ternary
	// codes and alpha[name][row] the per-row α when generated ternary.
	weights map[string][]float32
	shapes  map[string][]int64
	codes   map[string][]int8
	alpha   map[string][]float32
	// ternary generates α·{−1,0,1} projections (α per row) instead of
	// normal floats.
	ternary bool
	// override sets specific tensors' values before writing.
	override map[string][]float32
	// packedU8 writes projections in BitNet's packed U8 form.
	packedU8 bool
	extra    map[string][]int64 // additional tensors (zeros)
}

func newTiny(arch string) *tinyModel {
	return &tinyModel{arch: arch, hidden: 256, inter: 512, layers: 2, heads: 4, kv: 2, voc: 40, dtype: safetensors.BF16, tied: true, ternary: true}
}

// roundTo makes v exactly representable in the model's dtype.
func (m *tinyModel) roundTo(v float32) float32 {
	switch m.dtype {
	case safetensors.BF16:
		return half.BF16ToF32(half.F32ToBF16(v))
	case safetensors.F16:
		return half.F16ToF32(half.F32ToF16(v))
	}
	return v
}

func (m *tinyModel) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	m.weights, m.shapes = map[string][]float32{}, map[string][]int64{}
	m.codes, m.alpha = map[string][]int8{}, map[string][]float32{}
	hd := m.hidden / m.heads
	add := func(name string, shape ...int64) {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = m.roundTo(float32(rng.NormFloat64() * 0.02))
		}
		m.weights[name], m.shapes[name] = v, shape
	}
	addLinear := func(name string, rows, k int) {
		add(name, int64(rows), int64(k))
		if !m.ternary {
			return
		}
		v := m.weights[name]
		codes := make([]int8, rows*k)
		al := make([]float32, rows)
		for r := 0; r < rows; r++ {
			al[r] = m.roundTo(float32(0.01 + 0.001*float64(r%7)))
			if m.packedU8 {
				al[r] = m.roundTo(0.0421875) // one weight_scale per tensor
			}
			for c := 0; c < k; c++ {
				q := int8(rng.IntN(3)) - 1
				codes[r*k+c] = q
				v[r*k+c] = float32(q) * al[r]
			}
		}
		m.codes[name], m.alpha[name] = codes, al
	}
	add("model.embed_tokens.weight", int64(m.voc), int64(m.hidden))
	add("model.norm.weight", int64(m.hidden))
	if !m.tied {
		add("lm_head.weight", int64(m.voc), int64(m.hidden))
	}
	for l := 0; l < m.layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", int64(m.hidden))
		add(p+"post_attention_layernorm.weight", int64(m.hidden))
		if m.arch == "bitnet" {
			add(p+"self_attn.attn_sub_norm.weight", int64(m.hidden))
			add(p+"mlp.ffn_sub_norm.weight", int64(m.inter))
		}
		addLinear(p+"self_attn.q_proj.weight", m.heads*hd, m.hidden)
		addLinear(p+"self_attn.k_proj.weight", m.kv*hd, m.hidden)
		addLinear(p+"self_attn.v_proj.weight", m.kv*hd, m.hidden)
		addLinear(p+"self_attn.o_proj.weight", m.hidden, m.heads*hd)
		addLinear(p+"mlp.gate_proj.weight", m.inter, m.hidden)
		addLinear(p+"mlp.up_proj.weight", m.inter, m.hidden)
		addLinear(p+"mlp.down_proj.weight", m.hidden, m.inter)
	}
	for name, shape := range m.extra {
		add(name, shape...)
	}
	for name, v := range m.override {
		copy(m.weights[name], v)
	}
	var srcs []safetensors.Source
	for name, v := range m.weights {
		shape := m.shapes[name]
		if m.packedU8 && m.codes[name] != nil {
			rows, k := int(shape[0]), int(shape[1])
			pk := make([]byte, rows/4*k)
			for r := 0; r < rows; r++ {
				p, i := r%(rows/4), r/(rows/4)
				for c := 0; c < k; c++ {
					pk[p*k+c] |= byte(m.codes[name][r*k+c]+1) << (2 * i)
				}
			}
			srcs = append(srcs, safetensors.Source{Name: name, DType: safetensors.U8, Shape: []int64{int64(rows / 4), int64(k)}, WriteTo: safetensors.FromBytes(pk)})
			sc := make([]byte, 2)
			safetensors.EncodeFloat32(sc, safetensors.BF16, []float32{m.alpha[name][0]})
			srcs = append(srcs, safetensors.Source{Name: name + "_scale", DType: safetensors.BF16, Shape: []int64{}, WriteTo: safetensors.FromBytes(sc)})
			continue
		}
		b := make([]byte, m.dtype.ByteSize(int64(len(v))))
		if err := safetensors.EncodeFloat32(b, m.dtype, v); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, safetensors.Source{Name: name, DType: m.dtype, Shape: shape, WriteTo: safetensors.FromBytes(b)})
	}
	safetensors.SortCanonical(srcs)
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(f, map[string]string{"format": "pt"}, srcs); err != nil {
		t.Fatal(err)
	}
	f.Close()

	cfg := map[string]any{
		"architectures": []string{map[string]string{"bitnet": "BitNetForCausalLM", "llama": "LlamaForCausalLM"}[m.arch]},
		"model_type":    m.arch, "hidden_size": m.hidden, "intermediate_size": m.inter,
		"num_hidden_layers": m.layers, "num_attention_heads": m.heads, "num_key_value_heads": m.kv,
		"vocab_size": m.voc, "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
		"tie_word_embeddings": m.tied, "bos_token_id": 38, "eos_token_id": 39,
	}
	if m.arch == "bitnet" {
		cfg["hidden_act"] = "relu2"
	} else {
		cfg["hidden_act"] = "silu"
	}
	writeJSON(t, filepath.Join(dir, "config.json"), cfg)
	vocab := map[string]int{}
	for i, s := range []string{"a", "b", "c", "d", "Ġ", "ab", "cd", "Ġa", "abcd"} {
		vocab[s] = i
	}
	writeJSON(t, filepath.Join(dir, "tokenizer.json"), map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{
			{"id": 38, "content": "<|begin_of_text|>", "special": true},
			{"id": 39, "content": "<|end_of_text|>", "special": true},
		},
		"pre_tokenizer": map[string]any{"type": "ByteLevel"},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"a b", "c d", "Ġ a", "ab cd"}},
	})
	writeJSON(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "add_bos_token": true})
	return dir
}

func writeJSON(t *testing.T, path string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func f32le(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return v
}
