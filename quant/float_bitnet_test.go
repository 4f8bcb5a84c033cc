package quant

import (
	"testing"
)

// A BitNet checkpoint of master weights packed to F32 (or F16) holds each
// projection ternarized, scale·{−1, 0, 1} with the tensor's absmean scale,
// as llama.cpp's converter writes it: runtimes run float weights as they
// are, and the masters are not the model. --ternarize none keeps the
// masters; the embedding is never ternarized.
func TestGGUFFloatBitNetIsTernarized(t *testing.T) {
	m := newTiny("bitnet")
	m.ternary = false
	in := m.write(t)
	const name, gname = "model.layers.1.mlp.gate_proj.weight", "blk.1.ffn_gate.weight"
	src := m.weights[name]
	var sum float64
	for _, v := range src {
		sum += float64(abs32(v))
	}
	s := AbsmeanScale(sum, int64(len(src)))
	want := make([]int8, len(src))
	TernarizeAbsmeanRow(want, src, s)
	for _, tern := range []string{TernarizeAuto, TernarizeNone} {
		out, _ := pack(t, in, FormatF32, tern)
		w := walkGGUF(t, out)
		got := f32le(w.bytes(t, gname))
		if len(got) != len(src) {
			t.Fatalf("%s: %d values, want %d", gname, len(got), len(src))
		}
		changed := 0
		for i, v := range got {
			exp := src[i]
			if tern != TernarizeNone {
				exp = s * float32(want[i])
			}
			if v != exp {
				if changed < 3 {
					t.Errorf("--ternarize %s: %s[%d] = %g, want %g", tern, gname, i, v, exp)
				}
				changed++
			}
		}
		if changed > 0 {
			t.Errorf("--ternarize %s: %d of %d values differ", tern, changed, len(got))
		}
		emb, srcEmb := f32le(w.bytes(t, "token_embd.weight")), m.weights["model.embed_tokens.weight"]
		for i := range srcEmb {
			if emb[i] != srcEmb[i] {
				t.Fatalf("--ternarize %s: token_embd.weight[%d] = %g, want the source's %g", tern, i, emb[i], srcEmb[i])
			}
		}
	}
}
