package cpu

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/h1b"
	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/quant"
	"github.com/edgectl/edgectl/sherry"
)

// bitnetSpec is a BitNet-shaped model with ternary weights generated from a
// seed, one row at a time, so that even the 2B-parameter benchmark model
// never sits in memory. Every group of 4 weights along K holds exactly one
// zero (3:4 sparsity), so every packing — Sherry included — is lossless,
// and the per-tensor scales α are powers of two, exact in fp16: the float
// checkpoint and all packed files describe the very same model.
type bitnetSpec struct {
	hidden, ffn, layers, heads, kv, vocab int
	seed                                  uint64
}

var bitnetMats = []string{"q", "k", "v", "o", "gate", "up", "down"}

func (s bitnetSpec) shape(mat int) (rows, k int) {
	hd := s.hidden / s.heads
	switch bitnetMats[mat] {
	case "q":
		return s.heads * hd, s.hidden
	case "k", "v":
		return s.kv * hd, s.hidden
	case "o":
		return s.hidden, s.heads * hd
	case "gate", "up":
		return s.ffn, s.hidden
	}
	return s.hidden, s.ffn
}

// alpha is the scale of a matrix: 2^-(4..7).
func (s bitnetSpec) alpha(layer, mat int) float32 {
	return float32(math.Ldexp(1, -4-(layer*7+mat)%4))
}

func (s bitnetSpec) rng(a, b, c int) *rand.Rand {
	return rand.New(rand.NewPCG(s.seed, uint64(a)<<40^uint64(b)<<32^uint64(c)))
}

// trits fills one row of matrix (layer, mat).
func (s bitnetSpec) trits(layer, mat, row int, dst []int8) {
	r := s.rng(layer+1, mat, row)
	var bits uint64
	left := 0
	for g := 0; g < len(dst); g += 4 {
		if left < 5 {
			bits, left = r.Uint64(), 64
		}
		zp := int(bits & 3)
		signs := bits >> 2 & 7
		bits >>= 5
		left -= 5
		k := 0
		for p := range 4 {
			if p == zp {
				dst[g+p] = 0
				continue
			}
			dst[g+p] = int8(signs>>k&1)*2 - 1
			k++
		}
	}
}

func (s bitnetSpec) floatRow(layer, mat, row int, q []int8, dst []float32) {
	s.trits(layer, mat, row, q)
	a := s.alpha(layer, mat)
	for i, v := range q {
		dst[i] = a * float32(v)
	}
}

// embedRow is row i of the (tied) embedding, exact in fp16. It is small
// (σ = 0.05) so the layers, not the token's own embedding, drive the
// tied head; otherwise a random model just repeats its input token.
func (s bitnetSpec) embedRow(i int, dst []float32) {
	r := s.rng(0, 0, i)
	for j := range dst {
		dst[j] = half.F16ToF32(half.F32ToF16(float32(0.05 * r.NormFloat64())))
	}
}

// norm is a norm weight vector (name distinguishes them).
func (s bitnetSpec) norm(layer, which, n int) []float32 {
	r := s.rng(1000+layer, which, 0)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(0.5 + r.Float64())
	}
	return v
}

const (
	normAttn = iota
	normFFN
	normAttnSub
	normFFNSub
	normFinal
)

func (s bitnetSpec) config() map[string]any {
	return map[string]any{
		"architectures": []string{"BitNetForCausalLM"}, "model_type": "bitnet", "hidden_act": "relu2",
		"hidden_size": s.hidden, "intermediate_size": s.ffn, "num_hidden_layers": s.layers,
		"num_attention_heads": s.heads, "num_key_value_heads": s.kv, "vocab_size": s.vocab,
		"max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
		"tie_word_embeddings": true, "bos_token_id": 0, "eos_token_id": 2, "torch_dtype": "float32",
	}
}

// writeSafetensors writes config.json and an F32 model.safetensors.
func (s bitnetSpec) writeSafetensors(dir string) error {
	cfg, _ := json.MarshalIndent(s.config(), "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		return err
	}
	var srcs []safetensors.Source
	vec := func(name string, v []float32) {
		srcs = append(srcs, safetensors.Source{Name: name, DType: safetensors.F32, Shape: []int64{int64(len(v))},
			WriteTo: func(w io.Writer) error { return writeF32(w, v) }})
	}
	srcs = append(srcs, safetensors.Source{Name: "model.embed_tokens.weight", DType: safetensors.F32,
		Shape: []int64{int64(s.vocab), int64(s.hidden)}, WriteTo: func(w io.Writer) error {
			row := make([]float32, s.hidden)
			for i := range s.vocab {
				s.embedRow(i, row)
				if err := writeF32(w, row); err != nil {
					return err
				}
			}
			return nil
		}})
	vec("model.norm.weight", s.norm(-1, normFinal, s.hidden))
	hfName := map[string]string{"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
		"o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
	for l := range s.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		vec(p+"input_layernorm.weight", s.norm(l, normAttn, s.hidden))
		vec(p+"post_attention_layernorm.weight", s.norm(l, normFFN, s.hidden))
		vec(p+"self_attn.attn_sub_norm.weight", s.norm(l, normAttnSub, s.hidden))
		vec(p+"mlp.ffn_sub_norm.weight", s.norm(l, normFFNSub, s.ffn))
		for mi, mat := range bitnetMats {
			rows, k := s.shape(mi)
			srcs = append(srcs, safetensors.Source{Name: p + hfName[mat] + ".weight", DType: safetensors.F32,
				Shape: []int64{int64(rows), int64(k)}, WriteTo: func(w io.Writer) error {
					q, f := make([]int8, k), make([]float32, k)
					for r := range rows {
						s.floatRow(l, mi, r, q, f)
						if err := writeF32(w, f); err != nil {
							return err
						}
					}
					return nil
				}})
		}
	}
	return writeFile(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error {
		return safetensors.Write(w, map[string]string{"format": "pt"}, srcs)
	})
}

// writeGGUF writes the model as quant pack lays out BitNet in GGUF:
// ternary matrices as TQ1_0/TQ2_0, an F16 tied token_embd, F32 norms.
func (s bitnetSpec) writeGGUF(path string, typ gguf.Type) error {
	return writeFile(path, func(out io.Writer) error {
		w := gguf.NewWriter(out)
		kv := []struct {
			k string
			v any
		}{
			{"general.architecture", "bitnet"}, {"general.name", "generated-bitnet"},
			{"bitnet.context_length", uint32(4096)}, {"bitnet.embedding_length", uint32(s.hidden)},
			{"bitnet.block_count", uint32(s.layers)}, {"bitnet.feed_forward_length", uint32(s.ffn)},
			{"bitnet.attention.head_count", uint32(s.heads)}, {"bitnet.attention.head_count_kv", uint32(s.kv)},
			{"bitnet.attention.layer_norm_rms_epsilon", float32(1e-5)}, {"bitnet.rope.freq_base", float32(500000)},
			{"bitnet.rope.dimension_count", uint32(s.hidden / s.heads)}, {"bitnet.hidden_activation", "relu2"},
			{"tokenizer.ggml.bos_token_id", uint32(0)}, {"tokenizer.ggml.eos_token_id", uint32(2)},
		}
		for _, e := range kv {
			if err := w.Set(e.k, e.v); err != nil {
				return err
			}
		}
		type tensor struct {
			name  string
			typ   gguf.Type
			ne    []int64
			write func(io.Writer) error
		}
		var ts []tensor
		vec := func(name string, v []float32) {
			ts = append(ts, tensor{name, gguf.TypeF32, []int64{int64(len(v))}, func(w io.Writer) error { return writeF32(w, v) }})
		}
		ts = append(ts, tensor{"token_embd.weight", gguf.TypeF16, []int64{int64(s.hidden), int64(s.vocab)}, func(w io.Writer) error {
			row := make([]float32, s.hidden)
			buf := make([]byte, 2*s.hidden)
			for i := range s.vocab {
				s.embedRow(i, row)
				half.EncodeF16(buf, row)
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		}})
		vec("output_norm.weight", s.norm(-1, normFinal, s.hidden))
		ggName := map[string]string{"q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
			"gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down"}
		for l := range s.layers {
			p := fmt.Sprintf("blk.%d.", l)
			vec(p+"attn_norm.weight", s.norm(l, normAttn, s.hidden))
			vec(p+"ffn_norm.weight", s.norm(l, normFFN, s.hidden))
			vec(p+"attn_sub_norm.weight", s.norm(l, normAttnSub, s.hidden))
			vec(p+"ffn_sub_norm.weight", s.norm(l, normFFNSub, s.ffn))
			for mi, mat := range bitnetMats {
				rows, k := s.shape(mi)
				ts = append(ts, tensor{p + ggName[mat] + ".weight", typ, []int64{int64(k), int64(rows)}, func(w io.Writer) error {
					q, f := make([]int8, k), make([]float32, k)
					buf := make([]byte, typ.RowSize(int64(k)))
					for r := range rows {
						s.floatRow(l, mi, r, q, f)
						var err error
						if typ == gguf.TypeTQ2_0 {
							err = quant.QuantizeRowTQ2_0(buf, f)
						} else {
							err = quant.QuantizeRowTQ1_0(buf, f)
						}
						if err != nil {
							return err
						}
						if _, err := w.Write(buf); err != nil {
							return err
						}
					}
					return nil
				}})
			}
		}
		for _, t := range ts {
			if err := w.AddTensor(t.name, t.typ, t.ne...); err != nil {
				return err
			}
		}
		if err := w.WriteHeader(); err != nil {
			return err
		}
		for _, t := range ts {
			if err := t.write(w); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		return w.Finish()
	})
}

// writeH1B writes a legacy .h1b (v2 HALO_V2, v3 Sherry, v4 base-3).
func (s bitnetSpec) writeH1B(path string, version int32) error {
	h := h1b.Header{Version: version, HiddenSize: int32(s.hidden), IntermediateSize: int32(s.ffn),
		NumLayers: int32(s.layers), NumHeads: int32(s.heads), NumKVHeads: int32(s.kv), VocabSize: int32(s.vocab),
		MaxSeqLen: 4096, TieEmbeddings: 1, RopeTheta: 500000, RMSNormEps: 1e-5}
	return writeFile(path, func(out io.Writer) error {
		w, err := h1b.NewWriter(out, h)
		if err != nil {
			return err
		}
		row := make([]float32, s.hidden)
		for i := range s.vocab {
			s.embedRow(i, row)
			if err := w.WriteF32("embedding", row); err != nil {
				return err
			}
		}
		if err := w.WriteF32("final_norm", s.norm(-1, normFinal, s.hidden)); err != nil {
			return err
		}
		for l := range s.layers {
			p := fmt.Sprintf("layers.%d.", l)
			for _, v := range []struct {
				name string
				v    []float32
			}{{"input_norm", s.norm(l, normAttn, s.hidden)}, {"post_attn_norm", s.norm(l, normFFN, s.hidden)},
				{"attn_sub_norm", s.norm(l, normAttnSub, s.hidden)}, {"ffn_sub_norm", s.norm(l, normFFNSub, s.ffn)}} {
				if err := w.WriteF32(p+v.name, v.v); err != nil {
					return err
				}
			}
			for mi, mat := range bitnetMats {
				rows, k := s.shape(mi)
				rb, err := h1b.RowBytes(version, k)
				if err != nil {
					return err
				}
				q, f, buf := make([]int8, k), make([]float32, k), make([]byte, rb)
				for r := range rows {
					s.floatRow(l, mi, r, q, f)
					switch version {
					case h1b.V2HALO2:
						quant.PackRowHALO2(buf, q)
					case h1b.V4TQ1:
						quant.PackRowTQ1H(buf, q)
					case h1b.V3Sherry:
						if err := sherry.PackRow(buf, f); err != nil {
							return err
						}
					}
					if err := w.WritePacked(p+mat, buf); err != nil {
						return err
					}
				}
				sc := make([]float32, rows)
				for i := range sc {
					sc[i] = s.alpha(l, mi)
				}
				if err := w.WriteScales(p+mat, sc); err != nil {
					return err
				}
			}
		}
		return w.Finish()
	})
}

func writeF32(w io.Writer, v []float32) error {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	_, err := w.Write(b)
	return err
}

func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := fill(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func copyFile(t interface{ Fatal(...any) }, src, dst string) {
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
