package cpu

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/quant"
)

// ggufQuantFixtures are TinyStories files llama.cpp's llama-quantize
// wrote, with llama.cpp's greedy text and a float64 reference's
// (expected.jsonl; README.md there says how they were made). They live
// outside the repository (../shared): the tests that read them skip
// without them.
const ggufQuantFixtures = "../../../shared/fixtures/gguf-quants"

// writeTinyStoriesGGUF writes the TinyStories checkpoint as a llama GGUF
// at path, as llama.cpp's converter lays it out (q/k rows permuted for
// interleaved RoPE, quant.PermuteQK), each matrix in typeOf(its GGUF
// name) (quantized with format/gguf's quantizers; zero bytes for a type
// they do not write), the norms in F32, and the checkpoint's
// tokenizer.json beside it.
func writeTinyStoriesGGUF(t *testing.T, path string, typeOf func(name string) gguf.Type) {
	t.Helper()
	cfg, err := hfconfig.Load(tinyStories)
	must(t, err)
	ck, err := safetensors.OpenCheckpoint(tinyStories)
	must(t, err)
	defer ck.Close()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyFile(t, filepath.Join(tinyStories, f), filepath.Join(filepath.Dir(path), f))
	}
	get := func(name string) ([]float32, []int64) {
		f, tn, ok := ck.Lookup(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		v, err := f.Float32(tn)
		must(t, err)
		return v, tn.Shape
	}
	must(t, writeFile(path, func(out io.Writer) error {
		w := gguf.NewWriter(out)
		for k, v := range map[string]any{"general.architecture": "llama", "llama.embedding_length": uint32(cfg.HiddenSize),
			"llama.block_count": uint32(cfg.NumHiddenLayers), "llama.feed_forward_length": uint32(cfg.IntermediateSize),
			"llama.attention.head_count": uint32(cfg.NumAttentionHeads), "llama.attention.head_count_kv": uint32(cfg.KVHeads()),
			"llama.context_length": uint32(512), "llama.attention.layer_norm_rms_epsilon": float32(cfg.RMSNormEps),
			"llama.rope.freq_base": float32(cfg.RopeTheta), "tokenizer.ggml.bos_token_id": uint32(1), "tokenizer.ggml.eos_token_id": uint32(2)} {
			must(t, w.Set(k, v))
		}
		var data [][]byte
		addT := func(gname, hf string, permHeads int) {
			v, shape := get(hf)
			if permHeads > 0 {
				k := int(shape[1])
				order := quant.PermuteQK(int(shape[0]), permHeads)
				p := make([]float32, len(v))
				for j, src := range order {
					copy(p[j*k:(j+1)*k], v[src*k:(src+1)*k])
				}
				v = p
			}
			ne := []int64{shape[len(shape)-1]}
			typ := gguf.TypeF32
			if len(shape) == 2 {
				ne = append(ne, shape[0])
				typ = typeOf(gname)
			}
			must(t, w.AddTensor(gname, typ, ne...))
			var b []byte
			if typ == gguf.TypeF32 {
				b = make([]byte, 0, 4*len(v))
				for _, x := range v {
					b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
				}
			} else if b, err = gguf.Quantize(typ, v); err != nil {
				b = make([]byte, typ.RowSize(ne[0])*ne[1])
			}
			data = append(data, b)
		}
		addT("token_embd.weight", "lm_head.weight", 0)
		addT("output_norm.weight", "model.norm.weight", 0)
		for l := range cfg.NumHiddenLayers {
			p, h := fmt.Sprintf("blk.%d.", l), fmt.Sprintf("model.layers.%d.", l)
			addT(p+"attn_norm.weight", h+"input_layernorm.weight", 0)
			addT(p+"ffn_norm.weight", h+"post_attention_layernorm.weight", 0)
			addT(p+"attn_q.weight", h+"self_attn.q_proj.weight", cfg.NumAttentionHeads)
			addT(p+"attn_k.weight", h+"self_attn.k_proj.weight", cfg.KVHeads())
			addT(p+"attn_v.weight", h+"self_attn.v_proj.weight", 0)
			addT(p+"attn_output.weight", h+"self_attn.o_proj.weight", 0)
			addT(p+"ffn_gate.weight", h+"mlp.gate_proj.weight", 0)
			addT(p+"ffn_up.weight", h+"mlp.up_proj.weight", 0)
			addT(p+"ffn_down.weight", h+"mlp.down_proj.weight", 0)
		}
		must(t, w.WriteHeader())
		for _, b := range data {
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return w.Finish()
	}))
}

// fixtureCase is one line of expected.jsonl.
type fixtureCase struct {
	File, Prompt string
	LlamaCpp     string `json:"llamacpp_text"`
	Deq          struct {
		PromptIDs []int   `json:"prompt_ids"`
		IDs       []int   `json:"ids"`
		Text      string  `json:"text"`
		MinMargin float64 `json:"min_margin"`
	} `json:"deq_f64"`
}

// readFixtureCases reads expected.jsonl, skipping the test without it.
func readFixtureCases(t *testing.T) []fixtureCase {
	f, err := os.Open(filepath.Join(ggufQuantFixtures, "expected.jsonl"))
	if err != nil {
		t.Skipf("llama.cpp quantized fixtures absent (../shared): %v", err)
	}
	defer f.Close()
	var out []fixtureCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c fixtureCase
		must(t, json.Unmarshal(sc.Bytes(), &c))
		out = append(out, c)
	}
	must(t, sc.Err())
	return out
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// TestGGUFQuantFixturesGenerate loads each file llama-quantize wrote
// (Q8_0, Q4_0, Q4_K_M with its Q6_K tensors, Q6_K; the token embedding in
// a block type, tied as the head) and checks its greedy text agrees for
// at least 40 characters with the float64 forward pass over the
// dequantized weights or with llama.cpp's.
func TestGGUFQuantFixturesGenerate(t *testing.T) {
	cases := readFixtureCases(t)
	want := map[string][]gguf.Type{
		"tinystories-Q8_0.gguf":      {gguf.TypeQ8_0},
		"tinystories-Q4_0.gguf":      {gguf.TypeQ4_0, gguf.TypeQ8_0},
		"tinystories256-Q4_K_M.gguf": {gguf.TypeQ4_K, gguf.TypeQ6_K},
		"tinystories256-Q6_K.gguf":   {gguf.TypeQ6_K},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		types, ok := want[c.File]
		if !ok {
			continue // the SentencePiece file is the tokenizer's test
		}
		seen[c.File] = true
		t.Run(c.File+"/"+c.Prompt, func(t *testing.T) {
			m := loadModel(t, filepath.Join(ggufQuantFixtures, c.File))
			if q := strings.TrimSuffix(strings.SplitN(c.File, "-", 2)[1], ".gguf"); m.info.Quantization != q {
				t.Errorf("quantization reported as %q, want %q", m.info.Quantization, q)
			}
			got := map[gguf.Type]bool{}
			for _, l := range append([]linear{m.w.embed, m.w.head}, layerLinears(m)...) {
				q, ok := l.(*quantLinear)
				if !ok {
					t.Fatalf("%T in a quantized file", l)
				}
				got[q.typ] = true
			}
			for _, typ := range types {
				if !got[typ] {
					t.Errorf("no %s matrix loaded (have %v)", typ, got)
				}
			}
			if ids := m.tok.Encode(c.Prompt, true); fmt.Sprint(ids) != fmt.Sprint(c.Deq.PromptIDs) {
				t.Errorf("prompt ids %v, the reference's %v", ids, c.Deq.PromptIDs)
			}
			out, _ := generate(t, m, engine.Request{Prompt: c.Prompt, MaxTokens: 60, Sampling: greedy()})
			deq, lcpp := commonPrefix(out, c.Deq.Text), commonPrefix(out, c.LlamaCpp)
			t.Logf("%d characters agree with the float64 reference, %d with llama.cpp\nengine:    %q\nfloat64:   %q\nllama.cpp: %q",
				deq, lcpp, out, c.Deq.Text, c.LlamaCpp)
			if max(deq, lcpp) < 40 {
				t.Errorf("greedy text parts from both references within 40 characters")
			}
		})
	}
	for f := range want {
		if !seen[f] {
			t.Errorf("expected.jsonl has no line for %s", f)
		}
	}
}

func layerLinears(m *model) []linear {
	var out []linear
	for _, L := range m.w.layers {
		out = append(out, L.q, L.k, L.v, L.o, L.gate, L.up, L.down)
	}
	return out
}

// TestQuantizedTinyStoriesMatchesFloat quantizes the repository's
// TinyStories checkpoint with format/gguf's own quantizers (the token
// embedding in Q8_0, the layers in Q8_0 or Q4_0, as llama-quantize lays
// them out) and checks the greedy text agrees with the float
// checkpoint's for at least 40 characters.
func TestQuantizedTinyStoriesMatchesFloat(t *testing.T) {
	const prompt = "Once upon a time"
	float, _ := generate(t, loadModel(t, tinyStories), engine.Request{Prompt: prompt, MaxTokens: 40, Sampling: greedy()})
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_0} {
		t.Run(typ.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ts.gguf")
			writeTinyStoriesGGUF(t, path, func(name string) gguf.Type {
				if name == "token_embd.weight" {
					return gguf.TypeQ8_0
				}
				return typ
			})
			m := loadModel(t, path)
			if q, ok := m.w.layers[0].gate.(*quantLinear); !ok || q.typ != typ || m.info.Quantization != typ.String() {
				t.Fatalf("gate %T, quantization %q", m.w.layers[0].gate, m.info.Quantization)
			}
			out, _ := generate(t, m, engine.Request{Prompt: prompt, MaxTokens: 40, Sampling: greedy()})
			n := commonPrefix(out, float)
			t.Logf("%d characters agree\n%s:  %q\nfloat: %q", n, typ, out, float)
			if n < 40 {
				t.Errorf("greedy text parts from the float model's after %d characters", n)
			}
		})
	}
}

// TestGGUFUnsupportedBlockTypeRefused: a matrix in a block type the
// engine has no kernels for is refused with the tensor, its byte offset
// and what to do.
func TestGGUFUnsupportedBlockTypeRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ts.gguf")
	writeTinyStoriesGGUF(t, path, func(name string) gguf.Type {
		if name == "blk.1.ffn_gate.weight" {
			return gguf.TypeMXFP4
		}
		return gguf.TypeQ8_0
	})
	_, err := New().Load(t.Context(), path, engine.LoadOptions{})
	if err == nil {
		t.Fatal("MXFP4 matrix loaded")
	}
	for _, want := range []string{path, `tensor "blk.1.ffn_gate.weight" (MXFP4) at byte `, "Q2_K…Q6_K", "requantize"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
