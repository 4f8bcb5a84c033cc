package cpu

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/half"
)

// Decode and prefill of the files llama-quantize wrote (../shared): small
// models (two layers, width 256), so these time the whole token path
// (norms, attention, dispatch) more than the weights' bandwidth; the
// kernel benchmarks below time the products on matrices the size of a
// 0.5B model's.
func BenchmarkDecodeGGUFQ4_K_M(b *testing.B) {
	benchDecode(b, filepath.Join(ggufQuantFixtures, "tinystories256-Q4_K_M.gguf"))
}
func BenchmarkDecodeGGUFQ8_0(b *testing.B) {
	benchDecode(b, filepath.Join(ggufQuantFixtures, "tinystories-Q8_0.gguf"))
}
func BenchmarkPrefillGGUFQ4_K_M(b *testing.B) {
	benchPrefill(b, filepath.Join(ggufQuantFixtures, "tinystories256-Q4_K_M.gguf"))
}
func BenchmarkPrefillGGUFQ8_0(b *testing.B) {
	benchPrefill(b, filepath.Join(ggufQuantFixtures, "tinystories-Q8_0.gguf"))
}

// benchQuantKernel times one product of a rows × k matrix of type typ
// (larger than the caches, as in decode) in GB/s of weights read.
func benchQuantKernel(b *testing.B, typ gguf.Type, rows, k, tokens int) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, k)
	raw := make([]byte, 0, int(typ.RowSize(int64(k)))*rows)
	for range rows {
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		q, err := gguf.Quantize(typ, x)
		if err != nil {
			b.Fatal(err)
		}
		raw = append(raw, q...)
	}
	l, err := newQuantLinear(raw, typ, rows, k)
	if err != nil {
		b.Fatal(err)
	}
	m := &model{pool: newPool(benchThreads), kern: hostKernels(b)}
	defer m.pool.close()
	a := newActs(m.kern, rng, tokens, k)
	out := make([]float32, rows*tokens)
	b.SetBytes(l.size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.blocks[l.form].ok = false
		m.matmul(out, l, a)
	}
	b.ReportMetric(float64(b.N*rows*tokens)/b.Elapsed().Seconds()/1e6, "Mrows/s")
}

// A 0.5B model's FFN (4864 × 896 rounded to the super-block: 4864 × 1024)
// times four: ~20 M weights per product.
func BenchmarkKernelQ8_0(b *testing.B)    { benchQuantKernel(b, gguf.TypeQ8_0, 4*4864, 1024, 1) }
func BenchmarkKernelQ4_0(b *testing.B)    { benchQuantKernel(b, gguf.TypeQ4_0, 4*4864, 1024, 1) }
func BenchmarkKernelQ4_K(b *testing.B)    { benchQuantKernel(b, gguf.TypeQ4_K, 4*4864, 1024, 1) }
func BenchmarkKernelQ5_K(b *testing.B)    { benchQuantKernel(b, gguf.TypeQ5_K, 4*4864, 1024, 1) }
func BenchmarkKernelQ6_K(b *testing.B)    { benchQuantKernel(b, gguf.TypeQ6_K, 4*4864, 1024, 1) }
func BenchmarkKernelQ4_Kx64(b *testing.B) { benchQuantKernel(b, gguf.TypeQ4_K, 4864, 1024, 64) }

func BenchmarkKernelBigQ4_K(b *testing.B) { benchQuantKernel(b, gguf.TypeQ4_K, 64*4864, 1024, 1) }
func BenchmarkKernelBigQ8_0(b *testing.B) { benchQuantKernel(b, gguf.TypeQ8_0, 32*4864, 1024, 1) }
func BenchmarkKernelBigQ6_K(b *testing.B) { benchQuantKernel(b, gguf.TypeQ6_K, 48*4864, 1024, 1) }

// llama04B is a llama of a small model's shape (hidden 1024, 24 layers,
// FFN 4096, 16/4 heads, vocab 32000, untied head: 0.43 B parameters),
// random weights, for decode and prefill rates where the weights dominate
// the token's work, as they do in the models people run.
var llama04B = struct{ hidden, ffn, layers, heads, kv, vocab int }{1024, 4096, 24, 16, 4, 32000}

// llamaGen names the generator's version in the cached files' names (on
// top of benchVersion, which covers the shared writers): bump it when
// quantBenchModel's output changes. g2: fixed key order, rope and vocab
// size keys (llama.cpp reads the files, scripts/bench-llamacpp.sh).
const llamaGen = "g2"

// quantBenchModel returns the path of the cached generated llama in mix
// ("Q8_0"; "Q4_K_M": Q4_K with attn_v and ffn_down of every other layer,
// and the head, in Q6_K, as llama-quantize's mix keeps more bits there;
// or "F16": every matrix F16), norms F32, generating it on first use
// (≈0.3–0.9 GB, tens of seconds).
func quantBenchModel(b *testing.B, mix string) string {
	benchGenMu.Lock()
	defer benchGenMu.Unlock()
	dir := filepath.Join(os.TempDir(), "edgectl-bench", benchVersion)
	p := filepath.Join(dir, "llama0.4b-"+llamaGen+"-"+mix+".gguf")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	s := llama04B
	typeOf := func(name string, layer int) gguf.Type {
		switch mix {
		case "Q8_0":
			return gguf.TypeQ8_0
		case "F16":
			return gguf.TypeF16
		}
		switch {
		case name == "output.weight", layer%2 == 0 && (name == "attn_v.weight" || name == "ffn_down.weight"):
			return gguf.TypeQ6_K
		}
		return gguf.TypeQ4_K
	}
	type tensor struct {
		name string
		typ  gguf.Type
		ne   []int64
	}
	hd := s.hidden / s.heads
	ts := []tensor{{"token_embd.weight", typeOf("token_embd.weight", -1), []int64{int64(s.hidden), int64(s.vocab)}},
		{"output_norm.weight", gguf.TypeF32, []int64{int64(s.hidden)}},
		{"output.weight", typeOf("output.weight", -1), []int64{int64(s.hidden), int64(s.vocab)}}}
	for l := range s.layers {
		for _, m := range []struct {
			name string
			k, n int
		}{{"attn_norm.weight", s.hidden, 0}, {"ffn_norm.weight", s.hidden, 0},
			{"attn_q.weight", s.hidden, s.heads * hd}, {"attn_k.weight", s.hidden, s.kv * hd}, {"attn_v.weight", s.hidden, s.kv * hd},
			{"attn_output.weight", s.heads * hd, s.hidden}, {"ffn_gate.weight", s.hidden, s.ffn}, {"ffn_up.weight", s.hidden, s.ffn},
			{"ffn_down.weight", s.ffn, s.hidden}} {
			name := fmt.Sprintf("blk.%d.%s", l, m.name)
			if m.n == 0 {
				ts = append(ts, tensor{name, gguf.TypeF32, []int64{int64(m.k)}})
			} else {
				ts = append(ts, tensor{name, typeOf(m.name, l), []int64{int64(m.k), int64(m.n)}})
			}
		}
	}
	err := writeFile(p, func(out io.Writer) error {
		w := gguf.NewWriter(out)
		// A slice, not a map: the header's key order, and so the file, is
		// the same on every run.
		kv := []struct {
			k string
			v any
		}{
			{"general.architecture", "llama"}, {"general.name", "generated-llama0.4b-" + mix},
			{"llama.context_length", uint32(2048)}, {"llama.embedding_length", uint32(s.hidden)},
			{"llama.block_count", uint32(s.layers)}, {"llama.feed_forward_length", uint32(s.ffn)},
			{"llama.attention.head_count", uint32(s.heads)}, {"llama.attention.head_count_kv", uint32(s.kv)},
			{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)}, {"llama.rope.freq_base", float32(10000)},
			{"llama.rope.dimension_count", uint32(hd)}, {"llama.vocab_size", uint32(s.vocab)},
		}
		for _, e := range kv {
			if err := w.Set(e.k, e.v); err != nil {
				return err
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
		rng := rand.New(rand.NewPCG(4, 4))
		for _, t := range ts {
			n := int(t.ne[0])
			if len(t.ne) == 2 {
				n *= int(t.ne[1])
			}
			x := make([]float32, n)
			for i := range x {
				if t.typ == gguf.TypeF32 {
					x[i] = 1
				} else {
					x[i] = float32(rng.NormFloat64() * 0.05)
				}
			}
			var data []byte
			switch t.typ {
			case gguf.TypeF32:
				data = make([]byte, 0, 4*n)
				for _, v := range x {
					data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
				}
			case gguf.TypeF16:
				data = make([]byte, 2*n)
				half.EncodeF16(data, x)
			default:
				var err error
				if data, err = gguf.Quantize(t.typ, x); err != nil {
					return err
				}
			}
			if _, err := w.Write(data); err != nil {
				return err
			}
		}
		return w.Finish()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %s in %s", p, time.Since(start).Round(time.Second))
	return p
}

// Decode and prefill of the generated 0.43 B llama: the numbers to set
// against llama.cpp's on a model of this size.
func BenchmarkDecodeLlamaQ4_K_M(b *testing.B)  { benchDecode(b, quantBenchModel(b, "Q4_K_M")) }
func BenchmarkDecodeLlamaQ8_0(b *testing.B)    { benchDecode(b, quantBenchModel(b, "Q8_0")) }
func BenchmarkDecodeLlamaF16(b *testing.B)     { benchDecode(b, quantBenchModel(b, "F16")) }
func BenchmarkPrefillLlamaQ4_K_M(b *testing.B) { benchPrefill(b, quantBenchModel(b, "Q4_K_M")) }
func BenchmarkPrefillLlamaQ8_0(b *testing.B)   { benchPrefill(b, quantBenchModel(b, "Q8_0")) }
func BenchmarkPrefillLlamaF16(b *testing.B)    { benchPrefill(b, quantBenchModel(b, "F16")) }
