package prep

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/format/safetensors"
)

// writeBitNet writes a small BitNet-shaped checkpoint (BitNet-2B-4T tensor
// layout, relu², sub-norms, tied embedding) into dir with ternary weights
// that every packing takes losslessly: each group of 4 weights along K has
// exactly one zero (Sherry's 3:4 pattern) and each matrix's scale is a
// power of two. The tokenizer is the TinyStories fixture's.
func writeBitNet(t *testing.T, dir string) { writeTinyModel(t, dir, "bitnet", 256, 512) }

// writeLlama writes a small random Llama with the byte-level tokenizer (the
// axllm tokenizer export needs byte-level BPE, which TinyStories is not).
func writeLlama(t *testing.T, dir string) { writeTinyModel(t, dir, "llama", 128, 256) }

func writeTinyModel(t *testing.T, dir, arch string, hidden, ffn int) {
	t.Helper()
	const layers, heads, kv, vocab = 2, 4, 2, 512
	bitnet := arch == "bitnet"
	hd := hidden / heads
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	arches, act := []string{"BitNetForCausalLM"}, "relu2"
	if !bitnet {
		arches, act = []string{"LlamaForCausalLM"}, "silu"
	}
	cfg, _ := json.MarshalIndent(map[string]any{
		"architectures": arches, "model_type": arch, "hidden_act": act,
		"hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": layers,
		"num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
		"max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
		"tie_word_embeddings": true, "bos_token_id": vocab - 1, "eos_token_id": vocab - 1, "torch_dtype": "float32",
	}, "", "  ")
	must(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
	writeByteLevelTokenizer(t, dir, vocab)

	rng := rand.New(rand.NewPCG(7, 8))
	var srcs []safetensors.Source
	add := func(name string, shape []int64, v []float32) {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		srcs = append(srcs, safetensors.Source{Name: name, DType: safetensors.F32, Shape: shape, WriteTo: safetensors.FromBytes(b)})
	}
	norm := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(0.5 + rng.Float64())
		}
		return v
	}
	ternary := func(rows, k int, alpha float32) []float32 {
		v := make([]float32, rows*k)
		for g := 0; g < len(v); g += 4 {
			zero := rng.IntN(4)
			for p := range 4 {
				if p != zero {
					v[g+p] = alpha * float32(rng.IntN(2)*2-1)
				}
			}
		}
		return v
	}
	emb := make([]float32, vocab*hidden)
	for i := range emb {
		emb[i] = half.F16ToF32(half.F32ToF16(float32(0.05 * rng.NormFloat64())))
	}
	add("model.embed_tokens.weight", []int64{int64(vocab), int64(hidden)}, emb)
	add("model.norm.weight", []int64{int64(hidden)}, norm(hidden))
	mats := []struct {
		name    string
		rows, k int
	}{
		{"self_attn.q_proj", heads * hd, hidden}, {"self_attn.k_proj", kv * hd, hidden}, {"self_attn.v_proj", kv * hd, hidden},
		{"self_attn.o_proj", hidden, heads * hd}, {"mlp.gate_proj", ffn, hidden}, {"mlp.up_proj", ffn, hidden}, {"mlp.down_proj", hidden, ffn},
	}
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", []int64{int64(hidden)}, norm(hidden))
		add(p+"post_attention_layernorm.weight", []int64{int64(hidden)}, norm(hidden))
		if bitnet {
			add(p+"self_attn.attn_sub_norm.weight", []int64{int64(hidden)}, norm(hidden))
			add(p+"mlp.ffn_sub_norm.weight", []int64{int64(ffn)}, norm(ffn))
		}
		for i, m := range mats {
			alpha := float32(math.Ldexp(1, -4-(l*7+i)%4))
			add(p+m.name+".weight", []int64{int64(m.rows), int64(m.k)}, ternary(m.rows, m.k, alpha))
		}
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	must(t, err)
	defer f.Close()
	must(t, safetensors.Write(f, map[string]string{"format": "pt"}, srcs))
}

// writeByteLevelTokenizer writes a GPT-2-style byte-level BPE tokenizer of
// vocab tokens (the 256 byte symbols, merges of letter pairs, and
// <|endoftext|> last): the kind BitNet-2B-4T (Llama-3) uses and .htok holds.
func writeByteLevelTokenizer(t *testing.T, dir string, vocab int) {
	t.Helper()
	// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the
	// others for code points from 256 on.
	sym := make([]string, 256)
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			sym[b] = string(rune(b))
		} else {
			sym[b] = string(rune(256 + n))
			n++
		}
	}
	ids := map[string]int{}
	for b, s := range sym {
		ids[s] = b
	}
	var merges []string
	letters := "etaoinshrdlucmwfygpbvk"
	for _, first := range append([]string{sym[' ']}, strings.Split(letters, "")...) {
		for _, second := range letters {
			if len(ids) >= vocab-1 {
				break
			}
			tok := first + string(second)
			if _, dup := ids[tok]; dup {
				continue
			}
			ids[tok] = len(ids)
			merges = append(merges, first+" "+string(second))
		}
	}
	eos := "<|endoftext|>"
	ids[eos] = len(ids)
	if len(ids) != vocab {
		t.Fatalf("tokenizer has %d tokens, want %d", len(ids), vocab)
	}
	tok, _ := json.MarshalIndent(map[string]any{
		"version":        "1.0",
		"added_tokens":   []map[string]any{{"id": vocab - 1, "content": eos, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "vocab": ids, "merges": merges},
	}, "", "  ")
	must(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644))
	cfg, _ := json.MarshalIndent(map[string]any{"bos_token": eos, "eos_token": eos, "add_bos_token": false,
		"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512}, "", "  ")
	must(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
