package cpu

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/internal/envconfig"
	"github.com/edgectl/edgectl/quant"
)

// TestGGUFLessCommonTypesGenerate requantizes llama-quantize's Q6_K
// fixture (width 256, so the K-quants apply) into a mix of Q4_1, Q5_0,
// Q5_1, IQ4_NL, Q2_K and Q3_K, one type a matrix in turn (the tied
// embedding and head among them), and checks that the portable kernels'
// greedy text agrees for 40 characters with a float64 forward pass over
// the file's dequantized weights (as the fixtures' own texts were made),
// and that every other kernel table this CPU has generates the portable
// kernels' text (they agree to rounding, so only a near-tie could part
// them). The reference is first checked on the fixture itself: its
// greedy tokens are expected.jsonl's float64 ones.
func TestGGUFLessCommonTypesGenerate(t *testing.T) {
	const refTokens = 20
	src := filepath.Join(ggufQuantFixtures, "tinystories256-Q6_K.gguf")
	for _, c := range readFixtureCases(t) {
		if c.File == filepath.Base(src) && len(c.Deq.IDs) >= refTokens {
			ids := refGreedy(loadRefGGUF(t, src), c.Deq.PromptIDs, refTokens)
			if fmt.Sprint(ids) != fmt.Sprint(c.Deq.IDs[:refTokens]) {
				t.Fatalf("float64 reference of %s: greedy ids %v, expected.jsonl's %v", src, ids, c.Deq.IDs[:refTokens])
			}
		}
	}
	mix := []gguf.Type{gguf.TypeQ5_1, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeIQ4_NL, gguf.TypeQ3_K, gguf.TypeQ2_K}
	path := filepath.Join(t.TempDir(), "ts256-mix.gguf")
	requantizeGGUF(t, src, path, mix)
	const prompt = "Once upon a time"

	// The tables: portable, the host's, and the host's lesser ones.
	type table struct{ name, env string }
	tables := []table{{"go", envconfig.PureGo.Name}, {"host", ""}}
	if f := detectFeatures(); f.avx512 {
		tables = append(tables, table{"avx2", envconfig.NoAVX512.Name})
	} else if f.dotProd {
		tables = append(tables, table{"neon", envconfig.NoDotProd.Name})
	}
	var portable string
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			if tb.env != "" {
				t.Setenv(tb.env, "1")
			}
			m := loadModel(t, path)
			got := map[gguf.Type]bool{}
			for _, l := range append([]linear{m.w.embed, m.w.head}, layerLinears(m)...) {
				if q, ok := l.(*quantLinear); ok {
					got[q.typ] = true
				}
			}
			for _, typ := range mix {
				if !got[typ] {
					t.Errorf("no %s matrix loaded (have %v)", typ, got)
				}
			}
			out, _ := generate(t, m, engine.Request{Prompt: prompt, MaxTokens: 60, Sampling: greedy()})
			if tb.name == "go" {
				portable = out
				want := m.tok.Decode(refGreedy(loadRefGGUF(t, path), m.tok.Encode(prompt, true), refTokens))
				n := commonPrefix(out, want)
				t.Logf("%d characters agree with the float64 forward pass\nengine:  %q\nfloat64: %q", n, out, want)
				if n < 40 {
					t.Errorf("greedy text parts from the float64 reference's within 40 characters")
				}
				return
			}
			n := commonPrefix(out, portable)
			t.Logf("%s table: %d of %d characters agree with the portable kernels'", m.kern.name, n, len(portable))
			if n < min(len(portable), 40) {
				t.Errorf("%s table's text parts from the portable kernels' after %d characters\n%s: %q\ngo: %q", m.kern.name, n, m.kern.name, out, portable)
			}
		})
	}
}

// loadRefGGUF is the float64 reference model of a llama GGUF file: its
// weights dequantized, q/k rows back in the checkpoint's order, under
// the checkpoint's names (the embedding tied as the head).
func loadRefGGUF(t *testing.T, path string) *refModel {
	t.Helper()
	g, err := gguf.Open(path)
	must(t, err)
	defer g.Close()
	meta := func(key string) int {
		v, err := g.Int("llama." + key)
		must(t, err)
		return int(v)
	}
	eps, err := g.Float("llama.attention.layer_norm_rms_epsilon")
	must(t, err)
	theta, err := g.Float("llama.rope.freq_base")
	must(t, err)
	r := &refModel{t: map[string][]float64{}, hidden: meta("embedding_length"), ffn: meta("feed_forward_length"),
		layers: meta("block_count"), heads: meta("attention.head_count"), kv: meta("attention.head_count_kv"),
		eps: eps, theta: theta, tied: true}
	r.hd = r.hidden / r.heads
	names := strings.NewReplacer("token_embd", "model.embed_tokens", "output_norm", "model.norm", "blk.", "model.layers.",
		"attn_norm", "input_layernorm", "ffn_norm", "post_attention_layernorm", "attn_q", "self_attn.q_proj",
		"attn_k", "self_attn.k_proj", "attn_v", "self_attn.v_proj", "attn_output", "self_attn.o_proj",
		"ffn_gate", "mlp.gate_proj", "ffn_up", "mlp.up_proj", "ffn_down", "mlp.down_proj")
	for _, ti := range g.Tensors {
		b, err := g.Bytes(ti)
		must(t, err)
		f := make([]float32, ti.Elements())
		must(t, gguf.Dequantize(ti.Type, b, f))
		d := make([]float64, len(f))
		k, rows := int(ti.Ne[0]), int(ti.Rows())
		order := make([]int, rows) // file row j is the checkpoint's row order[j]
		for j := range order {
			order[j] = j
		}
		switch {
		case strings.HasSuffix(ti.Name, "attn_q.weight"):
			order = quant.PermuteQK(rows, r.heads)
		case strings.HasSuffix(ti.Name, "attn_k.weight"):
			order = quant.PermuteQK(rows, r.kv)
		}
		for j, dst := range order {
			for i, v := range f[j*k : (j+1)*k] {
				d[dst*k+i] = float64(v)
			}
		}
		r.t[names.Replace(ti.Name)] = d
		if ti.Name == "token_embd.weight" {
			r.vocab = int(ti.Rows())
		}
	}
	return r
}

// refGreedy is the reference's n greedy tokens after prompt.
func refGreedy(r *refModel, prompt []int, n int) []int {
	ids := slices.Clone(prompt)
	for range n {
		l := r.logits(ids)[len(ids)-1]
		best := 0
		for i, v := range l {
			if v > l[best] {
				best = i
			}
		}
		ids = append(ids, best)
	}
	return ids[len(prompt):]
}

// requantizeGGUF writes src's metadata and tensors to dst, each matrix
// dequantized and quantized again in the next type of mix (the vectors
// stay F32), general.file_type dropped.
func requantizeGGUF(t *testing.T, src, dst string, mix []gguf.Type) {
	t.Helper()
	g, err := gguf.Open(src)
	must(t, err)
	defer g.Close()
	must(t, writeFile(dst, func(out io.Writer) error {
		w := gguf.NewWriter(out)
		for _, kv := range g.KVs {
			if kv.Key == "general.file_type" {
				continue
			}
			if err := w.Set(kv.Key, kv.Value); err != nil {
				return err
			}
		}
		var data [][]byte
		n := 0
		for _, ti := range g.Tensors {
			b, err := g.Bytes(ti)
			if err != nil {
				return err
			}
			typ := ti.Type
			if len(ti.Ne) == 2 && ti.Type != gguf.TypeF32 && !strings.HasSuffix(ti.Name, "norm.weight") {
				typ = mix[n%len(mix)]
				n++
				f := make([]float32, ti.Elements())
				if err := gguf.Dequantize(ti.Type, b, f); err != nil {
					return err
				}
				if b, err = gguf.Quantize(typ, f); err != nil {
					return err
				}
			}
			if err := w.AddTensor(ti.Name, typ, ti.Ne...); err != nil {
				return err
			}
			data = append(data, b)
		}
		if err := w.WriteHeader(); err != nil {
			return err
		}
		for _, b := range data {
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return w.Finish()
	}))
}
