package cpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/tokenizer"
	"github.com/edgectl/edgectl/format/chattemplate"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/h1b"
)

// loadGGUF opens a GGUF model as `quant pack`, llama.cpp's converter or
// llama-quantize write it. Ternary and block-quantized tensors stay in
// their file layout, mmapped; a file may mix types (Q4_K_M keeps some
// tensors in Q6_K, and falls back to other types where a row does not fill
// a 256-element super-block).
func loadGGUF(path string) (*model, error) {
	g, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	if g.Architecture() == "bert" {
		return loadBertGGUFFile(g) // bert_load.go
	}
	m, err := ggufModel(g)
	if err != nil {
		g.Close()
		return nil, err
	}
	m.closers = append(m.closers, g)
	m.info.Format = "gguf"
	if err := m.sidecarTokenizer(path, nil); err != nil {
		g.Close()
		return nil, err
	}
	if m.tok == nil {
		if err := m.ggufTokenizer(g); err != nil {
			g.Close()
			return nil, err
		}
	}
	m.info.Quantization = m.quantization()
	if len(m.w.layers) > 0 {
		// A block-quantized file is known by its llama-quantize mix
		// ("Q4_K_M"), not by the type of its first layer's gate.
		if _, ok := m.w.layers[0].gate.(*quantLinear); ok {
			if ft, err := g.Int("general.file_type"); err == nil && gguf.FileTypeName(uint32(ft)) != "" {
				m.info.Quantization = gguf.FileTypeName(uint32(ft))
			}
		}
	}
	m.info.Parameters = m.params()
	m.pooling = ggufPooling(g, engine.PoolMean)
	return m, nil
}

func ggufModel(g *gguf.File) (*model, error) {
	an := g.Architecture()
	a := arch{name: an, bos: -1}
	switch an {
	case "llama":
		// llama.cpp's converter permutes q/k rows so that rotary pairs are
		// adjacent; LLAMA_ROPE_TYPE_NORM rotates (2i, 2i+1).
		a.ropeInterleaved = true
	case "qwen2":
		a.bias = true
	case "qwen3":
		a.qkNorm = true
	case "bitnet":
		a.subNorm, a.relu2 = true, true
	default:
		return nil, fmt.Errorf("%s: general.architecture %q: %w (the CPU engine runs llama, qwen2, qwen3 and bitnet)", g.Path, an, engine.ErrUnsupported)
	}
	geti := func(key string, def int) (int, error) {
		v, err := g.Int(an + "." + key)
		if errors.Is(err, gguf.ErrMissingKey) && def >= 0 {
			return def, nil
		}
		return int(v), err
	}
	var err error
	for _, f := range []struct {
		dst *int
		key string
		def int
	}{
		{&a.hidden, "embedding_length", -1}, {&a.layers, "block_count", -1}, {&a.ffn, "feed_forward_length", -1},
		{&a.heads, "attention.head_count", -1}, {&a.kvHeads, "attention.head_count_kv", 0}, {&a.ctx, "context_length", 2048},
	} {
		if *f.dst, err = geti(f.key, f.def); err != nil {
			return nil, err
		}
	}
	if a.kvHeads == 0 {
		a.kvHeads = a.heads
	}
	if a.heads > 0 {
		a.headDim = a.hidden / a.heads
	}
	if kd, err := geti("attention.key_length", 0); err == nil && kd > 0 {
		a.headDim = kd
	}
	eps, err := g.Float(an + ".attention.layer_norm_rms_epsilon")
	if err != nil {
		eps = 1e-5
	}
	a.eps = float32(eps)
	if a.ropeTheta, err = g.Float(an + ".rope.freq_base"); err != nil {
		a.ropeTheta = 10000
	}
	if act, err := g.String(an + ".hidden_activation"); err == nil {
		a.relu2 = act == "relu2"
	}
	if v, err := g.Int("tokenizer.ggml.bos_token_id"); err == nil {
		a.bos = int(v)
	}
	if v, err := g.Int("tokenizer.ggml.eos_token_id"); err == nil {
		a.eos = append(a.eos, int(v))
	}
	emb, ok := g.Tensor("token_embd.weight")
	if !ok {
		return nil, fmt.Errorf("%s: tensor token_embd.weight is missing", g.Path)
	}
	if len(emb.Ne) == 2 {
		a.vocab = int(emb.Ne[1])
	}
	if a.ctx == 0 {
		a.ctx = 2048
	}
	if err := checkDims(&a, g.Path, ggufDimNames(an), len(g.Tensors)); err != nil {
		return nil, err
	}
	m := &model{arch: a}
	l := ggufLoader{g}
	if m.w.embed, err = l.embedding("token_embd.weight", a.vocab, a.hidden); err != nil {
		return nil, err
	}
	if m.w.norm, err = l.vec("output_norm.weight", a.hidden); err != nil {
		return nil, err
	}
	if _, ok := g.Tensor("output.weight"); ok {
		if m.w.head, err = l.matrix("output.weight", a.vocab, a.hidden); err != nil {
			return nil, err
		}
	} else {
		m.w.head = m.w.embed
	}
	hd, qd, kvd := a.headDim, a.heads*a.headDim, a.kvHeads*a.headDim
	m.w.layers = make([]layer, a.layers)
	for i := range a.layers {
		p := fmt.Sprintf("blk.%d.", i)
		L := &m.w.layers[i]
		if L.attnNorm, err = l.vec(p+"attn_norm.weight", a.hidden); err != nil {
			return nil, err
		}
		if L.ffnNorm, err = l.vec(p+"ffn_norm.weight", a.hidden); err != nil {
			return nil, err
		}
		for _, mt := range []struct {
			dst        *linear
			name       string
			rows, cols int
		}{
			{&L.q, "attn_q", qd, a.hidden}, {&L.k, "attn_k", kvd, a.hidden}, {&L.v, "attn_v", kvd, a.hidden},
			{&L.o, "attn_output", a.hidden, qd}, {&L.gate, "ffn_gate", a.ffn, a.hidden},
			{&L.up, "ffn_up", a.ffn, a.hidden}, {&L.down, "ffn_down", a.hidden, a.ffn},
		} {
			if *mt.dst, err = l.matrix(p+mt.name+".weight", mt.rows, mt.cols); err != nil {
				return nil, err
			}
			if _, ok := g.Tensor(p + mt.name + ".scale"); ok {
				s, err := l.vec(p+mt.name+".scale", 1)
				if err != nil {
					return nil, err
				}
				*mt.dst = &scaledLinear{(*mt.dst), s[0]}
			}
		}
		if a.bias {
			if L.qBias, err = l.vec(p+"attn_q.bias", qd); err != nil {
				return nil, err
			}
			if L.kBias, err = l.vec(p+"attn_k.bias", kvd); err != nil {
				return nil, err
			}
			if L.vBias, err = l.vec(p+"attn_v.bias", kvd); err != nil {
				return nil, err
			}
		}
		if a.qkNorm {
			if L.qNorm, err = l.vec(p+"attn_q_norm.weight", hd); err != nil {
				return nil, err
			}
			if L.kNorm, err = l.vec(p+"attn_k_norm.weight", hd); err != nil {
				return nil, err
			}
		}
		if a.subNorm {
			if L.attnSubNorm, err = l.vec(p+"attn_sub_norm.weight", qd); err != nil {
				return nil, err
			}
			if L.ffnSubNorm, err = l.vec(p+"ffn_sub_norm.weight", a.ffn); err != nil {
				return nil, err
			}
		}
	}
	m.info.Name = strings.TrimSuffix(filepath.Base(g.Path), ".gguf")
	return m, nil
}

type ggufLoader struct{ g *gguf.File }

func (l ggufLoader) tensor(name string, ne ...int) (gguf.TensorInfo, []byte, error) {
	t, ok := l.g.Tensor(name)
	if !ok {
		return t, nil, fmt.Errorf("%s: tensor %q is missing", l.g.Path, name)
	}
	match := len(t.Ne) == len(ne) || (len(ne) == 1 && t.Elements() == int64(ne[0]))
	for i := range ne {
		if i < len(t.Ne) && t.Ne[i] != int64(ne[i]) && len(ne) > 1 {
			match = false
		}
	}
	if !match {
		return t, nil, fmt.Errorf("%s: tensor %q has ne %v, expected %v from the %s.* keys", l.g.Path, name, t.Ne, ne, l.g.Architecture())
	}
	b, err := l.g.Bytes(t)
	return t, b, err
}

func (l ggufLoader) vec(name string, n int) ([]float32, error) {
	t, b, err := l.tensor(name, n)
	if err != nil {
		return nil, err
	}
	fr, err := newFloatRows(b, t.Type.String(), 1, n)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", l.g.Path, name, err)
	}
	out := make([]float32, n)
	fr.row(0, out)
	return out, nil
}

// embedding is the token embedding table: a float view, or a block type
// whose rows are dequantized on lookup.
func (l ggufLoader) embedding(name string, rows, cols int) (embedding, error) {
	t, b, err := l.tensor(name, cols, rows)
	if err != nil {
		return nil, err
	}
	if _, ok := quantTypeOf(t.Type); ok {
		return l.quant(t, b, rows, cols)
	}
	return l.floatRows(t, b, rows, cols)
}

func (l ggufLoader) floatRows(t gguf.TensorInfo, b []byte, rows, cols int) (*floatRows, error) {
	fr, err := newFloatRows(b, t.Type.String(), rows, cols)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q (%s) at byte %d: %w; %s", l.g.Path, t.Name, t.Type, t.Offset, err, ggufTypesRead)
	}
	fr.release = func(off, n int64) { l.g.ReleaseRange(t, off, n) }
	return fr, nil
}

func (l ggufLoader) quant(t gguf.TensorInfo, b []byte, rows, cols int) (*quantLinear, error) {
	q, err := newQuantLinear(b, t.Type, rows, cols)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q at byte %d: %w", l.g.Path, t.Name, t.Offset, err)
	}
	return q, nil
}

// ggufTypesRead is what the CPU engine multiplies, for error messages.
const ggufTypesRead = "the CPU engine reads F32, F16, BF16, TQ1_0, TQ2_0, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL and Q2_K…Q6_K (requantize the file with llama-quantize to one of them)"

// matrix is a float, ternary or block-quantized weight {K = cols, rows}.
func (l ggufLoader) matrix(name string, rows, cols int) (linear, error) {
	t, b, err := l.tensor(name, cols, rows)
	if err != nil {
		return nil, err
	}
	switch t.Type {
	case gguf.TypeTQ2_0, gguf.TypeTQ1_0:
		if cols%256 != 0 {
			return nil, fmt.Errorf("%s: tensor %q: K = %d is not a multiple of 256", l.g.Path, name, cols)
		}
		return newTernary(t.Type.String(), b, rows, cols, nil), nil
	}
	if _, ok := quantTypeOf(t.Type); ok {
		return l.quant(t, b, rows, cols)
	}
	return l.floatRows(t, b, rows, cols)
}

// scaledLinear multiplies a matrix's output by a scalar (GGUF `.scale`).
type scaledLinear struct {
	linear
	s float32
}

func (l *scaledLinear) mul(out []float32, ldo int, a *acts, r0, r1 int) {
	l.linear.mul(out, ldo, a, r0, r1)
	for t := range a.n {
		for r := r0; r < r1; r++ {
			out[t*ldo+r] *= l.s
		}
	}
}

// loadH1B opens a legacy .h1b. The format has no architecture field: it
// means BitNet (relu², attention and FFN sub-norms, rotate-half RoPE).
func loadH1B(path string) (*model, error) {
	f, err := h1b.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := h1bModel(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	m.closers = append(m.closers, f)
	m.info.Format = "h1b"
	htok := strings.TrimSuffix(path, ".h1b") + ".htok"
	if err := m.sidecarTokenizer(path, &htok); err != nil {
		f.Close()
		return nil, err
	}
	m.info.Quantization = m.quantization()
	m.info.Parameters = m.params()
	return m, nil
}

func h1bModel(f *h1b.File) (*model, error) {
	h := f.Header
	if h.Flags&(h1b.FlagHadamardRotated|h1b.FlagBonsaiQ1|h1b.FlagBonsaiTQ2) != 0 {
		return nil, fmt.Errorf("%s: flags 0x%x (Hadamard-rotated or Bonsai payloads) are not supported by the CPU engine; repack with `edgectl quant pack` without them", f.Path, h.Flags)
	}
	kind := map[int32]string{h1b.V1HALO2: "halo2", h1b.V2HALO2: "halo2", h1b.V3Sherry: "sherry", h1b.V4TQ1: "tq1h"}[h.Version]
	if kind == "" {
		return nil, fmt.Errorf("%s: .h1b version %d is not supported by the CPU engine (1–4)", f.Path, h.Version)
	}
	a := arch{name: "bitnet", hidden: int(h.HiddenSize), ffn: int(h.IntermediateSize), layers: int(h.NumLayers),
		heads: int(h.NumHeads), kvHeads: int(h.NumKVHeads), headDim: h.HeadDim(), vocab: int(h.VocabSize),
		ctx: int(h.MaxSeqLen), eps: h.Eps(), ropeTheta: float64(h.Theta()), relu2: true, subNorm: true, bos: -1}
	if a.ctx <= 0 {
		a.ctx = 4096
	}
	if err := checkDims(&a, f.Path, h1bDimNames, len(f.Tensors)); err != nil {
		return nil, err
	}
	m := &model{arch: a}
	vec := func(name string) ([]float32, error) {
		t, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("%s: no region %q", f.Path, name)
		}
		return f.Float32(t)
	}
	et, _ := f.Tensor("embedding")
	eb, err := f.Bytes(et)
	if err != nil {
		return nil, err
	}
	embed, err := newFloatRows(eb, "F32", a.vocab, a.hidden)
	if err != nil {
		return nil, fmt.Errorf("%s: embedding: %w", f.Path, err)
	}
	embed.release = func(off, n int64) { f.ReleaseRange(et, off, n) }
	m.w.embed, m.w.head = embed, embed
	if h.TieEmbeddings == 0 {
		return nil, fmt.Errorf("%s: untied LM head (tie_embeddings = 0): the .h1b layout has no place for it; export this model as GGUF instead", f.Path)
	}
	if m.w.norm, err = vec("final_norm"); err != nil {
		return nil, err
	}
	m.w.layers = make([]layer, a.layers)
	for i := range a.layers {
		p := fmt.Sprintf("layers.%d.", i)
		L := &m.w.layers[i]
		for _, v := range []struct {
			dst  *[]float32
			name string
		}{{&L.attnNorm, "input_norm"}, {&L.ffnNorm, "post_attn_norm"}, {&L.attnSubNorm, "attn_sub_norm"}, {&L.ffnSubNorm, "ffn_sub_norm"}} {
			if *v.dst, err = vec(p + v.name); err != nil {
				return nil, err
			}
		}
		dst := []*linear{&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down}
		for j, name := range h1b.LinearNames {
			t, _ := f.Tensor(p + name)
			b, err := f.Bytes(t)
			if err != nil {
				return nil, err
			}
			s, err := f.Scales(t)
			if err != nil {
				return nil, err
			}
			*dst[j] = newTernary(kind, b, t.Rows, t.K, s)
		}
	}
	m.info.Name = strings.TrimSuffix(filepath.Base(f.Path), ".h1b")
	return m, nil
}

// sidecarTokenizer finds the tokenizer of a single-file model:
// tokenizer.json beside it (with its chat template), else the .htok
// sidecar when htok names one.
func (m *model) sidecarTokenizer(path string, htok *string) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
		return m.loadTokenizer(dir)
	}
	if htok != nil {
		if _, err := os.Stat(*htok); err == nil {
			ht, err := h1b.ReadTokenizer(*htok)
			if err != nil {
				return err
			}
			if len(ht.Tokens) == 0 || len(ht.Tokens) > maxVocab {
				return fmt.Errorf("%s: %d tokens, outside 1..%d; the sidecar is corrupt or hostile (write it again with `edgectl quant pack`)", *htok, len(ht.Tokens), maxVocab)
			}
			m.tok = tokenizer.FromHTok(ht.Tokens, ht.Merges, int(ht.BOS), int(ht.EOS))
			if m.arch.bos < 0 {
				m.arch.bos = int(ht.BOS)
			}
			m.arch.eos = dedupe(append(m.arch.eos, int(ht.EOS)))
		}
	}
	return nil
}

// ggufTokenizer builds the tokenizer from tokenizer.ggml.* when no
// tokenizer.json sits beside the file.
func (m *model) ggufTokenizer(g *gguf.File) error {
	v, ok, err := tokenizer.ReadGGUFVocab(g)
	if err != nil || !ok {
		return err // no tokenizer: the model can still be inspected
	}
	tok, err := tokenizer.FromGGUF(v)
	if err != nil {
		return fmt.Errorf("%s: %w", g.Path, err)
	}
	m.tok = tok
	if m.arch.bos < 0 {
		m.arch.bos = tok.BOS()
	}
	m.arch.eos = dedupe(append(m.arch.eos, tok.EOS()...))
	if src, err := g.String("tokenizer.chat_template"); err == nil && src != "" {
		t, err := chattemplate.Parse(src)
		if err != nil {
			return fmt.Errorf("%s: tokenizer.chat_template: %w", g.Path, err)
		}
		m.tmpl = t
	}
	return nil
}
