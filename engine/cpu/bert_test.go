package cpu

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/tokenizer"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// refBert is BERT's forward pass in float64, written from the published
// architecture (Devlin et al.; transformers' BertModel) over the
// generator's tensors, to check the engine against.
type refBert struct {
	t                          map[string][]float64
	hidden, ffn, layers, heads int
	eps                        float64
}

func newRefBert(s *testmodel.BertSpec) *refBert {
	r := &refBert{t: map[string][]float64{}, hidden: s.Hidden, ffn: s.FFN, layers: s.Layers, heads: s.Heads, eps: 1e-12}
	for _, t := range s.BertTensors() {
		d := make([]float64, len(t.Values))
		for i, v := range t.Values {
			d[i] = float64(v)
		}
		r.t[t.Name] = d
	}
	return r
}

func refLayerNorm(x, w, b []float64, eps float64) []float64 {
	n := float64(len(x))
	var mean, v float64
	for _, e := range x {
		mean += e / n
	}
	for _, e := range x {
		v += (e - mean) * (e - mean) / n
	}
	out := make([]float64, len(x))
	for i := range x {
		out[i] = (x[i]-mean)/math.Sqrt(v+eps)*w[i] + b[i]
	}
	return out
}

// dense is W·x + b for W [rows, len(x)].
func (r *refBert) dense(name string, x []float64) []float64 {
	b := r.t[name+".bias"]
	out := refMatVec(r.t[name+".weight"], x, len(b))
	for i := range out {
		out[i] += b[i]
	}
	return out
}

// states returns the last layer's state of every position.
func (r *refBert) states(ids []int) [][]float64 {
	H, n := r.hidden, len(ids)
	hd := H / r.heads
	xs := make([][]float64, n)
	for t, id := range ids {
		x := make([]float64, H)
		for i := range x {
			x[i] = r.t["embeddings.word_embeddings.weight"][id*H+i] + r.t["embeddings.position_embeddings.weight"][t*H+i] +
				r.t["embeddings.token_type_embeddings.weight"][i]
		}
		xs[t] = refLayerNorm(x, r.t["embeddings.LayerNorm.weight"], r.t["embeddings.LayerNorm.bias"], r.eps)
	}
	for l := range r.layers {
		p := "encoder.layer." + strconv.Itoa(l) + "."
		q, k, v := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for t := range n {
			q[t] = r.dense(p+"attention.self.query", xs[t])
			k[t] = r.dense(p+"attention.self.key", xs[t])
			v[t] = r.dense(p+"attention.self.value", xs[t])
		}
		next := make([][]float64, n)
		for t := range n {
			ctx := make([]float64, H)
			for h := range r.heads {
				sc := make([]float64, n)
				var sum float64
				for j := range n {
					var d float64
					for i := h * hd; i < (h+1)*hd; i++ {
						d += q[t][i] * k[j][i]
					}
					sc[j] = math.Exp(d / math.Sqrt(float64(hd)))
					sum += sc[j]
				}
				for j := range n {
					for i := h * hd; i < (h+1)*hd; i++ {
						ctx[i] += sc[j] / sum * v[j][i]
					}
				}
			}
			a := r.dense(p+"attention.output.dense", ctx)
			for i := range a {
				a[i] += xs[t][i]
			}
			a = refLayerNorm(a, r.t[p+"attention.output.LayerNorm.weight"], r.t[p+"attention.output.LayerNorm.bias"], r.eps)
			u := r.dense(p+"intermediate.dense", a)
			for i, x := range u {
				u[i] = 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
			}
			o := r.dense(p+"output.dense", u)
			for i := range o {
				o[i] += a[i]
			}
			next[t] = refLayerNorm(o, r.t[p+"output.LayerNorm.weight"], r.t[p+"output.LayerNorm.bias"], r.eps)
		}
		xs = next
	}
	return xs
}

// bertInputs are [CLS] … [SEP] id sequences of several lengths, one past
// the prefill chunk.
func bertInputs(vocab int) [][]int {
	var out [][]int
	for _, n := range []int{1, 5, 17, 60} {
		ids := []int{testmodel.BertCLS}
		for i := range n {
			ids = append(ids, 5+(i*7+n)%(vocab-5))
		}
		out = append(out, append(ids, testmodel.BertSEP))
	}
	return out
}

func idInputs(seqs [][]int) []engine.EmbedInput {
	out := make([]engine.EmbedInput, len(seqs))
	for i, s := range seqs {
		out[i] = engine.EmbedInput{Tokens: s}
	}
	return out
}

// genBert writes a generated encoder; without a tokenizer that reads its
// WordPiece tokenizer.json, the files go and inputs are token ids.
func genBert(t *testing.T, s testmodel.BertSpec) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	if err := testmodel.WriteBert(dir, s); err != nil {
		t.Fatal(err)
	}
	if _, err := tokenizer.Load(dir); err != nil {
		t.Logf("the tokenizer does not read WordPiece yet (%v): embedding token ids only", err)
		os.Remove(filepath.Join(dir, "tokenizer.json"))
		os.Remove(filepath.Join(dir, "tokenizer_config.json"))
		return dir, false
	}
	return dir, true
}

func loadEngineModel(t *testing.T, path string) engine.Model {
	t.Helper()
	m, err := New().Load(context.Background(), path, engine.LoadOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// smallBert is the fidelity tests' encoder (hidden 48, 4 heads, 2 layers,
// a few words) with its GGUF beside, pooled as asked (cls normalised).
func smallBert(t *testing.T, pooling string, maxPos int, seed uint64) (testmodel.BertSpec, string) {
	words := []string{"hello", "world", "the", "cat", "sat", "on", "mat", "edge", "device"}
	spec := testmodel.BertSpec{Hidden: 48, Heads: 4, Layers: 2, MaxPos: maxPos, Words: words, Pooling: pooling, Normalize: pooling == engine.PoolCLS, Seed: seed}
	spec.GGUF = filepath.Join(t.TempDir(), "enc.gguf")
	dir, _ := genBert(t, spec)
	return spec, dir
}

func TestBertEmbeddingMatchesFloat64Reference(t *testing.T) {
	for _, pooling := range []string{engine.PoolMean, engine.PoolCLS} {
		spec, dir := smallBert(t, pooling, 80, 7)
		m := loadEngineModel(t, dir)
		info := m.Info()
		if !info.Embeds || !info.EmbedOnly || info.Pooling != pooling || info.EmbedNormalized != spec.Normalize || info.Architecture != "bert" || info.EmbedLength != 48 {
			t.Fatalf("%s: Info %+v", pooling, info)
		}
		if _, err := m.NewSession(); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Fatalf("%s: NewSession on an encoder: %v, want an invalid request saying it only embeds", pooling, err)
		}
		ref := newRefBert(&spec)
		seqs := bertInputs(len(spec.BertVocab()))
		emb := m.(engine.Embedder)
		batch := embedOne(t, emb, engine.EmbedRequest{Inputs: idInputs(seqs)})
		for i, ids := range seqs {
			want := refPool(ref.states(ids), pooling)
			if c := cosine64(batch.Embeddings[i], want); c < 0.9999 {
				t.Errorf("%s: input of %d tokens: cosine to the float64 reference %.6f < 0.9999", pooling, len(ids), c)
			}
			alone := embedOne(t, emb, engine.EmbedRequest{Inputs: idInputs(seqs[i : i+1])})
			if !equalVec(alone.Embeddings[0], batch.Embeddings[i]) {
				t.Errorf("%s: input %d alone differs from input %d in a batch", pooling, i, i)
			}
			if spec.Normalize {
				var n float64
				for _, x := range batch.Embeddings[i] {
					n += float64(x) * float64(x)
				}
				if math.Abs(n-1) > 1e-5 {
					t.Errorf("%s with a Normalize module: |v|² = %v", pooling, n)
				}
			}
		}
		twice := embedOne(t, emb, engine.EmbedRequest{Inputs: idInputs([][]int{seqs[2], seqs[2]})})
		if !equalVec(twice.Embeddings[0], twice.Embeddings[1]) {
			t.Errorf("%s: the same input twice gave different vectors", pooling)
		}
		// The same weights in llama.cpp's GGUF naming give the same vectors.
		g := loadEngineModel(t, spec.GGUF)
		if gi := g.Info(); gi.Pooling != pooling || !gi.EmbedOnly || gi.Format != "gguf" {
			t.Fatalf("%s: GGUF Info %+v", pooling, gi)
		}
		gb := embedOne(t, g.(engine.Embedder), engine.EmbedRequest{Inputs: idInputs(seqs)})
		for i := range seqs {
			want := refPool(ref.states(seqs[i]), pooling)
			if c := cosine64(gb.Embeddings[i], want); c < 0.9999 {
				t.Errorf("%s GGUF: input %d: cosine %.6f < 0.9999", pooling, i, c)
			}
		}
	}
}

func TestBertContextLimit(t *testing.T) {
	spec := testmodel.BertSpec{MaxPos: 16, Words: []string{"a"}, Seed: 3, NoTokenizer: true}
	dir := t.TempDir()
	if err := testmodel.WriteBert(dir, spec); err != nil {
		t.Fatal(err)
	}
	emb := loadEngineModel(t, dir).(engine.Embedder)
	long := make([]int, 20)
	for i := range long {
		long[i] = 5
	}
	long[0], long[19] = testmodel.BertCLS, testmodel.BertSEP
	if _, err := emb.Embed(context.Background(), engine.EmbedRequest{Inputs: idInputs([][]int{long})}); !errors.Is(err, engine.ErrContextFull) {
		t.Fatalf("20 tokens into 16 positions: %v, want ErrContextFull", err)
	}
	// Without a tokenizer no id is known special: truncation keeps the first 16.
	res := embedOne(t, emb, engine.EmbedRequest{Inputs: idInputs([][]int{long}), Truncate: true})
	first := embedOne(t, emb, engine.EmbedRequest{Inputs: idInputs([][]int{long[:16]})})
	if res.Tokens[0] != 16 || !equalVec(res.Embeddings[0], first.Embeddings[0]) {
		t.Fatalf("truncated to %d tokens; want the first 16", res.Tokens[0])
	}
	if _, err := emb.Embed(context.Background(), engine.EmbedRequest{Inputs: textInputs("a")}); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Fatalf("text to an encoder without a tokenizer: %v, want an invalid request", err)
	}
}

func TestGeluErfAgreesWithMathErf(t *testing.T) {
	var xs []float32
	for x := -8.0; x <= 8; x += 1.0 / 64 {
		xs = append(xs, float32(x))
	}
	for _, kern := range kernelSets() {
		got := append([]float32(nil), xs...)
		geluErfRows(kern, got)
		for i, x := range xs {
			want := 0.5 * float64(x) * (1 + math.Erf(float64(x)/math.Sqrt2))
			if math.Abs(float64(got[i])-want) > 3e-7*math.Max(1, math.Abs(float64(x))) {
				t.Fatalf("%s: gelu(%v) = %v, want %v", kern.name, x, got[i], want)
			}
		}
	}
}
