package cpu

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
)

const tinyStories = "../../testdata/models/tinystories-656k"

// refModel is a plain float64 forward pass over a llama-family checkpoint,
// written for clarity rather than speed, to check the engine against.
type refModel struct {
	t                                         map[string][]float64
	hidden, ffn, layers, heads, kv, hd, vocab int
	eps, theta                                float64
	qkNorm, bias, tied                        bool
}

func loadRef(t *testing.T, dir string) *refModel {
	t.Helper()
	cfg, err := hfconfig.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	r := &refModel{t: map[string][]float64{}, hidden: cfg.HiddenSize, ffn: cfg.IntermediateSize,
		layers: cfg.NumHiddenLayers, heads: cfg.NumAttentionHeads, kv: cfg.KVHeads(), hd: cfg.HeadDimension(),
		vocab: cfg.VocabSize, eps: cfg.RMSNormEps, theta: cfg.RopeTheta, qkNorm: cfg.ModelType == "qwen3",
		bias: cfg.ModelType == "qwen2", tied: cfg.Tied()}
	for _, tn := range ck.Tensors() {
		f, _, _ := ck.Lookup(tn.Name)
		v, err := f.Float32(tn)
		if err != nil {
			t.Fatal(err)
		}
		d := make([]float64, len(v))
		for i, x := range v {
			d[i] = float64(x)
		}
		r.t[tn.Name] = d
	}
	return r
}

func refNorm(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] * inv * w[i]
	}
	return out
}

func refMatVec(w []float64, x []float64, rows int) []float64 {
	k := len(x)
	out := make([]float64, rows)
	for r := range rows {
		var s float64
		for i := range k {
			s += w[r*k+i] * x[i]
		}
		out[r] = s
	}
	return out
}

func (r *refModel) rope(x []float64, pos int) {
	half := r.hd / 2
	for i := range half {
		f := float64(pos) * math.Pow(r.theta, -2*float64(i)/float64(r.hd))
		c, s := math.Cos(f), math.Sin(f)
		a, b := x[i], x[i+half]
		x[i], x[i+half] = a*c-b*s, a*s+b*c
	}
}

// logits returns the logits after every token of ids.
func (r *refModel) logits(ids []int) [][]float64 {
	head := r.t["lm_head.weight"]
	if head == nil || (r.tied && r.t["model.embed_tokens.weight"] != nil) {
		head = r.embedTable()
	}
	out := make([][]float64, len(ids))
	for t, h := range r.normed(ids) {
		out[t] = refMatVec(head, h, r.vocab)
	}
	return out
}

func (r *refModel) embedTable() []float64 {
	if e := r.t["model.embed_tokens.weight"]; e != nil {
		return e
	}
	return r.t["lm_head.weight"] // tied, saved under one name
}

// normed returns the final-norm hidden state after every token of ids
// (what the head multiplies, and what embeddings pool).
func (r *refModel) normed(ids []int) [][]float64 {
	n := len(ids)
	H := r.hidden
	xs := make([][]float64, n)
	embed := r.embedTable()
	for t, id := range ids {
		xs[t] = append([]float64(nil), embed[id*H:(id+1)*H]...)
	}
	for l := range r.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ks, vs := make([][]float64, n), make([][]float64, n)
		qs := make([][]float64, n)
		for t := range n {
			xn := refNorm(xs[t], r.t[p+"input_layernorm.weight"], r.eps)
			qs[t] = refMatVec(r.t[p+"self_attn.q_proj.weight"], xn, r.heads*r.hd)
			ks[t] = refMatVec(r.t[p+"self_attn.k_proj.weight"], xn, r.kv*r.hd)
			vs[t] = refMatVec(r.t[p+"self_attn.v_proj.weight"], xn, r.kv*r.hd)
			if r.bias {
				for i := range qs[t] {
					qs[t][i] += r.t[p+"self_attn.q_proj.bias"][i]
				}
				for i := range ks[t] {
					ks[t][i] += r.t[p+"self_attn.k_proj.bias"][i]
					vs[t][i] += r.t[p+"self_attn.v_proj.bias"][i]
				}
			}
			for h := range r.heads {
				if r.qkNorm {
					copy(qs[t][h*r.hd:], refNorm(qs[t][h*r.hd:(h+1)*r.hd], r.t[p+"self_attn.q_norm.weight"], r.eps))
				}
				r.rope(qs[t][h*r.hd:(h+1)*r.hd], t)
			}
			for h := range r.kv {
				if r.qkNorm {
					copy(ks[t][h*r.hd:], refNorm(ks[t][h*r.hd:(h+1)*r.hd], r.t[p+"self_attn.k_norm.weight"], r.eps))
				}
				r.rope(ks[t][h*r.hd:(h+1)*r.hd], t)
			}
		}
		for t := range n {
			att := make([]float64, r.heads*r.hd)
			for h := range r.heads {
				kh := h / (r.heads / r.kv)
				sc := make([]float64, t+1)
				mx := math.Inf(-1)
				for p := 0; p <= t; p++ {
					var d float64
					for i := range r.hd {
						d += qs[t][h*r.hd+i] * ks[p][kh*r.hd+i]
					}
					sc[p] = d / math.Sqrt(float64(r.hd))
					mx = math.Max(mx, sc[p])
				}
				var sum float64
				for p := range sc {
					sc[p] = math.Exp(sc[p] - mx)
					sum += sc[p]
				}
				for p := range sc {
					for i := range r.hd {
						att[h*r.hd+i] += sc[p] / sum * vs[p][kh*r.hd+i]
					}
				}
			}
			o := refMatVec(r.t[p+"self_attn.o_proj.weight"], att, H)
			for i := range o {
				xs[t][i] += o[i]
			}
			xn := refNorm(xs[t], r.t[p+"post_attention_layernorm.weight"], r.eps)
			g := refMatVec(r.t[p+"mlp.gate_proj.weight"], xn, r.ffn)
			u := refMatVec(r.t[p+"mlp.up_proj.weight"], xn, r.ffn)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			d := refMatVec(r.t[p+"mlp.down_proj.weight"], g, H)
			for i := range d {
				xs[t][i] += d[i]
			}
		}
	}
	out := make([][]float64, n)
	for t := range n {
		out[t] = refNorm(xs[t], r.t["model.norm.weight"], r.eps)
	}
	return out
}

// maxRelErr is max|got−want| / max|want| over a logit vector.
func maxRelErr(got []float32, want []float64) float64 {
	var d, m float64
	for i := range want {
		d = math.Max(d, math.Abs(float64(got[i])-want[i]))
		m = math.Max(m, math.Abs(want[i]))
	}
	return d / m
}

func TestTinyStoriesLogitsMatchFloat64Reference(t *testing.T) {
	m := loadModel(t, tinyStories)
	ref := loadRef(t, tinyStories)
	ids := m.tok.Encode("Once upon a time, there was a little girl named Lily. She", true)
	want := ref.logits(ids)
	// Token by token: the decode path and the KV cache.
	st := newState(m)
	for i, id := range ids {
		got, err := st.forward(context.Background(), []int{id})
		if err != nil {
			t.Fatal(err)
		}
		if e := maxRelErr(got, want[i]); e > 1e-4 {
			t.Fatalf("position %d: max relative logit error %.3g > 1e-4", i, e)
		}
	}
	// All at once: the batched prefill path.
	st = newState(m)
	got, err := st.forward(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	if e := maxRelErr(got, want[len(ids)-1]); e > 1e-4 {
		t.Fatalf("prefill: max relative logit error %.3g > 1e-4", e)
	}
}
