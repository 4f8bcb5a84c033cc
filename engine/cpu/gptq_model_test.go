package cpu

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gptq"
	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/quant"
)

// gptqProjections are a llama layer's quantized projections: name
// within the layer, and which of the layer's inputs feeds it (GPTQ's
// act-order permutes inputs by the Hessian of that input, so projections
// of one input share a permutation).
var gptqProjections = []struct{ name, input string }{
	{"self_attn.q_proj", "attn"}, {"self_attn.k_proj", "attn"}, {"self_attn.v_proj", "attn"},
	{"self_attn.o_proj", "o"}, {"mlp.gate_proj", "mlp"}, {"mlp.up_proj", "mlp"}, {"mlp.down_proj", "down"},
}

// gptqFidelity compares a GPTQ/AWQ model with the float64 forward pass
// over deq (the checkpoint's weights dequantized by the test's own code)
// and with the float model: logits of every position of a prompt (decode
// and prefill) and greedy text. It returns the largest relative logit
// errors against both.
func gptqFidelity(t *testing.T, dir string, deq map[string][]float64, wantFormat string) (vsDeq, vsFloat float64) {
	t.Helper()
	m := loadModel(t, dir)
	if g, ok := m.w.layers[0].gate.(*gptqLinear); !ok || m.info.Quantization != wantFormat {
		t.Fatalf("gate %T, quantization %q, want %s", m.w.layers[0].gate, m.info.Quantization, wantFormat)
	} else if g.size() >= int64(g.r*g.c) {
		t.Errorf("%d bytes resident for %d weights", g.size(), g.r*g.c)
	}
	ref := loadRef(t, tinyStories)
	for name, w := range deq {
		ref.t[name] = w
	}
	fm := loadModel(t, tinyStories)
	const prompt = "Once upon a time, there was a little girl named Lily. She"
	ids := m.tok.Encode(prompt, true)
	want := ref.logits(ids)
	st, fst := newState(m), newState(fm)
	for i, id := range ids {
		got, err := st.forward(context.Background(), []int{id})
		must(t, err)
		vsDeq = math.Max(vsDeq, maxRelErr(got, want[i]))
		fl, err := fst.forward(context.Background(), []int{id})
		must(t, err)
		f64 := make([]float64, len(fl))
		for j, v := range fl {
			f64[j] = float64(v)
		}
		vsFloat = math.Max(vsFloat, maxRelErr(got, f64))
	}
	got, err := newState(m).forward(context.Background(), ids)
	must(t, err)
	vsDeq = math.Max(vsDeq, maxRelErr(got, want[len(ids)-1]))

	const gen = "Once upon a time"
	out, _ := generate(t, m, engine.Request{Prompt: gen, MaxTokens: 40, Sampling: greedy()})
	float, _ := generate(t, fm, engine.Request{Prompt: gen, MaxTokens: 40, Sampling: greedy()})
	deqText := m.tok.Decode(gptqRefGreedy(ref, m.tok.Encode(gen, true), 24))
	nDeq := commonPrefix(out, deqText)
	t.Logf("max relative logit error: %.3g against the float64 pass over the dequantized weights, %.3g against the float model\n"+
		"greedy text agrees for %d characters with the float64 pass's (of %d), %d with the float model's\n%s: %q\nfloat64: %q\nfloat: %q",
		vsDeq, vsFloat, nDeq, len(deqText), commonPrefix(out, float), wantFormat, out, deqText, float)
	if nDeq < 40 && nDeq < len(deqText) {
		t.Errorf("greedy text parts from the float64 pass over the same weights after %d characters", nDeq)
	}
	return vsDeq, vsFloat
}

// gptqRefGreedy continues ids greedily for n tokens with the float64 pass,
// returning the tokens generated.
func gptqRefGreedy(ref *refModel, ids []int, n int) []int {
	ids = slices.Clone(ids)
	p := len(ids)
	for range n {
		l := ref.logits(ids)
		last := l[len(l)-1]
		ids = append(ids, slices.Index(last, slices.Max(last)))
	}
	return ids[p:]
}

// TestGPTQPackedTinyStories runs the checkpoint `quant pack --format
// gptq-int4` writes (through the quant API): it loads, its logits stay
// within the activations' int8 rounding of the float64 pass over its own
// dequantized weights, and close to the float model's.
func TestGPTQPackedTinyStories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ts-gptq")
	if _, err := quant.Pack(t.Context(), quant.Options{Input: tinyStories, Output: dir, Format: quant.FormatGPTQInt4}); err != nil {
		t.Fatalf("quant pack gptq-int4: %v", err)
	}
	vsDeq, vsFloat := gptqFidelity(t, dir, readGPTQDequantized(t, dir, false, 1), "GPTQ-int4")
	if vsDeq > 3e-2 || vsFloat > 0.35 {
		t.Errorf("max relative logit error %.3g (dequantized reference, bound 3e-2), %.3g (float model, bound 0.35)", vsDeq, vsFloat)
	}
}

// readGPTQDequantized dequantizes every projection of a GPTQ (or AWQ)
// checkpoint with the test's own reading of the layouts (AutoGPTQ's and
// AutoAWQ's dequantization loops), through an independent path: the
// tensors' bytes from format/safetensors, nothing from format/gptq.
func readGPTQDequantized(t *testing.T, dir string, awq bool, zeroOffset int) map[string][]float64 {
	ck, err := safetensors.OpenCheckpoint(dir)
	must(t, err)
	defer ck.Close()
	read := func(name string) ([]byte, safetensors.Tensor) {
		f, ti, ok := ck.Lookup(name)
		if !ok {
			t.Fatalf("%s: no tensor %s", dir, name)
		}
		b, err := f.Bytes(ti)
		must(t, err)
		return b, ti
	}
	u32 := func(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
	out := map[string][]float64{}
	order := [8]int{0, 1, 2, 3, 4, 5, 6, 7} // nibble i holds output 8c+order[i]
	if awq {
		order = [8]int{0, 2, 4, 6, 1, 3, 5, 7}
	}
	nibbleOf := func(n int) int { return slices.Index(order[:], n%8) }
	for l := 0; ; l++ {
		if _, _, ok := ck.Lookup(fmt.Sprintf("model.layers.%d.mlp.down_proj.qweight", l)); !ok {
			break
		}
		for _, p := range gptqProjections {
			stem := fmt.Sprintf("model.layers.%d.%s", l, p.name)
			qw, qwt := read(stem + ".qweight")
			qz, _ := read(stem + ".qzeros")
			sb, st := read(stem + ".scales")
			G, n := int(st.Shape[0]), int(st.Shape[1])
			k := int(qwt.Shape[0])
			if !awq {
				k *= 8
			}
			gIdx := make([]int, k)
			if awq {
				for i := range gIdx {
					gIdx[i] = i / (k / G)
				}
			} else {
				gb, _ := read(stem + ".g_idx")
				for i := range gIdx {
					gIdx[i] = int(u32(gb, i))
				}
			}
			w := make([]float64, n*k)
			for r := range n {
				for i := range k {
					g := gIdx[i]
					var q uint32
					if awq {
						q = u32(qw, i*(n/8)+r/8) >> (4 * nibbleOf(r)) & 15
					} else {
						q = u32(qw, (i/8)*n+r) >> (4 * (i % 8)) & 15
					}
					z := int(u32(qz, g*(n/8)+r/8)>>(4*nibbleOf(r))&15) + zeroOffset
					s := half.F16ToF32(binary.LittleEndian.Uint16(sb[2*(g*n+r):]))
					w[r*k+i] = float64(s) * float64(int(q)-z)
				}
			}
			out[stem+".weight"] = w
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no quantized projections", dir)
	}
	return out
}

// TestGPTQForeignCheckpoints runs checkpoints the test writes itself from
// TinyStories' float weights in the layouts other quantizers write:
// AutoGPTQ's v1 with asymmetric zero points and act-order (desc_act, a
// shuffled g_idx shared by the projections of one input) and its config
// in quantize_config.json; GPTQModel's v2 (zeros stored as they are),
// group 64, config in config.json; and AutoAWQ's GEMM layout with
// quant_config.json. Each is checked as the packed one is, against the
// float64 pass over the test's own dequantized weights.
func TestGPTQForeignCheckpoints(t *testing.T) {
	for _, c := range []struct {
		name, file string
		cfg        gptq.Config
		meta       map[string]any
		format     string
	}{
		{"autogptq-v1-asym-desc_act", gptq.QuantizeConfigName,
			gptq.Config{Method: gptq.MethodGPTQ, Bits: 4, GroupSize: 128, DescAct: true, Format: gptq.FormatGPTQ},
			map[string]any{"bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": true, "static_groups": false, "sym": false, "true_sequential": true, "quant_method": "gptq", "checkpoint_format": "gptq"},
			"GPTQ-int4"},
		{"gptqmodel-v2-asym-desc_act-g64", "config.json",
			gptq.Config{Method: gptq.MethodGPTQ, Bits: 4, GroupSize: 64, DescAct: true, Format: gptq.FormatGPTQv2},
			map[string]any{"bits": 4, "group_size": 64, "desc_act": true, "sym": false, "method": "gptq", "format": "gptq_v2", "pack_dtype": "int32"},
			"GPTQ-int4"},
		{"autoawq-gemm-g64", gptq.AWQConfigName,
			gptq.Config{Method: gptq.MethodAWQ, Bits: 4, GroupSize: 64, Format: gptq.FormatGEMM},
			map[string]any{"zero_point": true, "q_group_size": 64, "w_bit": 4, "version": "GEMM"},
			"AWQ-int4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, deq := writeForeignGPTQ(t, c.cfg, c.file, c.meta)
			vsDeq, vsFloat := gptqFidelity(t, dir, deq, c.format)
			if vsDeq > 3e-2 || vsFloat > 0.35 {
				t.Errorf("max relative logit error %.3g (dequantized reference, bound 3e-2), %.3g (float model, bound 0.35)", vsDeq, vsFloat)
			}
		})
	}
}

// writeForeignGPTQ quantizes TinyStories' projections with the
// asymmetric min/max rule AutoGPTQ and AutoAWQ use (the range includes 0;
// v1 keeps z ≥ 1, which it can store) into cfg's layout, packed by the
// test's own loops (gptqTestLayer.pack), and writes the checkpoint with
// its config in file. It returns the directory and the dequantized
// weights.
func writeForeignGPTQ(t *testing.T, cfg gptq.Config, file string, meta map[string]any) (string, map[string][]float64) {
	dir := t.TempDir()
	ck, err := safetensors.OpenCheckpoint(tinyStories)
	must(t, err)
	defer ck.Close()
	rng := rand.New(rand.NewPCG(20, 63))
	perms := map[string][]int{}
	deq := map[string][]float64{}
	var sources []safetensors.Source
	for _, ti := range ck.Tensors() {
		f, _, _ := ck.Lookup(ti.Name)
		stem, isProj := strings.CutSuffix(ti.Name, ".weight")
		var input string
		for _, p := range gptqProjections {
			if isProj && strings.HasSuffix(stem, "."+p.name) {
				input = strings.TrimSuffix(stem, p.name) + p.input
			}
		}
		if input == "" {
			sources = append(sources, safetensors.Source{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, WriteTo: f.CopyTensor(ti)})
			continue
		}
		w, err := f.Float32(ti)
		must(t, err)
		n, k := int(ti.Shape[0]), int(ti.Shape[1])
		if perms[input] == nil {
			perms[input] = rng.Perm(k)
		}
		c := quantizeAsym(cfg, w, n, k, perms[input])
		deq[ti.Name] = make([]float64, n*k)
		for r := range n {
			for i := range k {
				deq[ti.Name][r*k+i] = c.weight(r, i)
			}
		}
		sc := make([]byte, 2*len(c.scales))
		for i, s := range c.scales {
			binary.LittleEndian.PutUint16(sc[2*i:], half.F32ToF16(s))
		}
		lay, err := cfg.Layout(n, k)
		must(t, err)
		bytesOf := func(b []byte) func(io.Writer) error {
			return func(w io.Writer) error { _, err := w.Write(b); return err }
		}
		sources = append(sources,
			safetensors.Source{Name: stem + ".qweight", DType: safetensors.I32, Shape: lay.QWeightShape(), WriteTo: bytesOf(c.qweight)},
			safetensors.Source{Name: stem + ".qzeros", DType: safetensors.I32, Shape: lay.QZerosShape(), WriteTo: bytesOf(c.qzero)},
			safetensors.Source{Name: stem + ".scales", DType: safetensors.F16, Shape: lay.ScalesShape(), WriteTo: bytesOf(sc)})
		if c.gIdxRaw != nil {
			sources = append(sources, safetensors.Source{Name: stem + ".g_idx", DType: safetensors.I32, Shape: lay.GIdxShape(), WriteTo: bytesOf(c.gIdxRaw)})
		}
	}
	out, err := os.Create(filepath.Join(dir, "model.safetensors"))
	must(t, err)
	must(t, safetensors.Write(out, map[string]string{"format": "pt"}, sources))
	must(t, out.Close())
	raw, err := os.ReadFile(filepath.Join(tinyStories, "config.json"))
	must(t, err)
	var doc map[string]any
	must(t, json.Unmarshal(raw, &doc))
	mb, err := json.Marshal(meta)
	must(t, err)
	if file == "config.json" {
		doc["quantization_config"] = meta
	} else {
		must(t, os.WriteFile(filepath.Join(dir, file), mb, 0o644))
	}
	cb, err := json.Marshal(doc)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "config.json"), cb, 0o644))
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		if _, err := os.Stat(filepath.Join(tinyStories, f)); err == nil {
			copyFile(t, filepath.Join(tinyStories, f), filepath.Join(dir, f))
		}
	}
	return dir, deq
}

// quantizeAsym quantizes W [n][k] per (row, group), the groups being
// perm's consecutive runs of group_size inputs (g_idx[perm[i]] =
// i/group_size): scale = (max − min)/15 over the group with 0 in the
// range, stored in fp16, z = round(−min/scale), c = clamp(round(w/s) + z).
func quantizeAsym(cfg gptq.Config, w []float32, n, k int, perm []int) *gptqTestLayer {
	gs := cfg.GroupSize
	c := &gptqTestLayer{cfg: cfg, n: n, k: k, gs: gs, gIdx: make([]int32, k)}
	if cfg.DescAct {
		for i, p := range perm {
			c.gIdx[p] = int32(i / gs)
		}
	} else {
		for i := range c.gIdx {
			c.gIdx[i] = int32(i / gs)
		}
	}
	G := c.groups()
	c.codes, c.zeros, c.scales = make([][]uint8, n), make([][]uint8, n), make([]float32, G*n)
	for r := range n {
		c.codes[r], c.zeros[r] = make([]uint8, k), make([]uint8, G)
		lo, hi := make([]float64, G), make([]float64, G)
		for i := range k {
			g := c.gIdx[i]
			lo[g], hi[g] = math.Min(lo[g], float64(w[r*k+i])), math.Max(hi[g], float64(w[r*k+i]))
		}
		for g := range G {
			s := half.F16ToF32(half.F32ToF16(float32(math.Max(hi[g]-lo[g], 1e-5) / 15)))
			z := math.RoundToEven(-lo[g] / float64(s))
			if cfg.Format == gptq.FormatGPTQ {
				z = math.Max(z, 1)
			}
			c.scales[g*n+r], c.zeros[r][g] = s, uint8(math.Min(z, 15))
		}
		for i := range k {
			g := c.gIdx[i]
			q := math.RoundToEven(float64(w[r*k+i])/float64(c.scales[int(g)*n+r])) + float64(c.zeros[r][g])
			c.codes[r][i] = uint8(math.Max(0, math.Min(15, q)))
		}
	}
	c.pack()
	return c
}

// TestGPTQBadCheckpointsRefused: a wrong-shaped qweight, an 8-bit config
// and a missing scales tensor are each refused in one line naming the
// tensor (or setting) and the file.
func TestGPTQBadCheckpointsRefused(t *testing.T) {
	src := filepath.Join(t.TempDir(), "ts-gptq")
	if _, err := quant.Pack(t.Context(), quant.Options{Input: tinyStories, Output: src, Format: quant.FormatGPTQInt4}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		edit  func(dir string)
		wants []string
	}{
		{"qweight shape", func(dir string) {
			rewriteTensors(t, src, dir, func(s *safetensors.Source) bool {
				if s.Name == "model.layers.0.mlp.up_proj.qweight" {
					s.Shape = []int64{s.Shape[1], s.Shape[0]}
				}
				return true
			})
		}, []string{`tensor "model.layers.0.mlp.up_proj.qweight" is I32 [384 16], expected I32 [16 384]`, "model.safetensors"}},
		{"bits 8", func(dir string) {
			rewriteTensors(t, src, dir, func(*safetensors.Source) bool { return true })
			editConfig(t, dir, `"bits":4`, `"bits":8`)
		}, []string{"config.json", "bits 8", "only 4-bit", "edgectl quant pack --format gptq-int4"}},
		{"group 16", func(dir string) {
			rewriteTensors(t, src, dir, func(*safetensors.Source) bool { return true })
			editConfig(t, dir, `"group_size":128`, `"group_size":16`)
		}, []string{"config.json", "group_size 16", "at least 32"}},
		{"g_idx out of range", func(dir string) {
			rewriteTensors(t, src, dir, func(s *safetensors.Source) bool {
				if s.Name == "model.layers.1.mlp.down_proj.g_idx" {
					g := make([]int32, s.Shape[0])
					g[200] = 3 // down_proj has K = 384: groups 0…2
					b := make([]byte, 4*len(g))
					gptq.PutGroupIndex(b, g)
					s.WriteTo = func(w io.Writer) error { _, err := w.Write(b); return err }
				}
				return true
			})
		}, []string{`tensor "model.layers.1.mlp.down_proj.g_idx"`, "g_idx[200] = 3 is not one of the 3 groups"}},
		{"missing scales", func(dir string) {
			rewriteTensors(t, src, dir, func(s *safetensors.Source) bool { return s.Name != "model.layers.1.self_attn.o_proj.scales" })
		}, []string{`tensor "model.layers.1.self_attn.o_proj.scales" is missing`, "model.safetensors", "re-export"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.edit(dir)
			_, err := New().Load(t.Context(), dir, engine.LoadOptions{})
			if err == nil {
				t.Fatal("loaded")
			}
			t.Log(err)
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// rewriteTensors copies checkpoint src to dst, tensor by tensor through
// keep (which may edit a tensor's header entry, or drop it).
func rewriteTensors(t *testing.T, src, dst string, keep func(*safetensors.Source) bool) {
	ck, err := safetensors.OpenCheckpoint(src)
	must(t, err)
	defer ck.Close()
	var sources []safetensors.Source
	for _, ti := range ck.Tensors() {
		f, _, _ := ck.Lookup(ti.Name)
		s := safetensors.Source{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, WriteTo: f.CopyTensor(ti)}
		if keep(&s) {
			sources = append(sources, s)
		}
	}
	out, err := os.Create(filepath.Join(dst, "model.safetensors"))
	must(t, err)
	must(t, safetensors.Write(out, nil, sources))
	must(t, out.Close())
	entries, err := os.ReadDir(src)
	must(t, err)
	for _, e := range entries {
		if e.Name() != "model.safetensors" {
			copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
		}
	}
}

// editConfig replaces old with new in dir's config.json, which must hold it.
func editConfig(t *testing.T, dir, old, new string) {
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	must(t, err)
	if !strings.Contains(string(b), old) {
		t.Fatalf("config.json has no %s: %s", old, b)
	}
	must(t, os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}
