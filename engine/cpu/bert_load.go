package cpu

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/format/safetensors"
)

// isEncoderConfig reports whether a config.json is a BERT-family encoder.
func isEncoderConfig(t *hfconfig.Config) bool {
	return strings.EqualFold(t.ModelType, "bert")
}

// bertArch maps a BERT config.json onto the engine's architecture.
func bertArch(c *hfconfig.Config) (arch, error) {
	t := c.Text()
	a := arch{name: "bert", hidden: t.HiddenSize, ffn: t.IntermediateSize, layers: t.NumHiddenLayers,
		heads: t.NumAttentionHeads, kvHeads: t.NumAttentionHeads, vocab: t.VocabSize, ctx: t.MaxPositionEmbeddings,
		eps: float32(t.LayerNormEps), ropeTheta: 10000, bos: -1}
	if a.heads > 0 {
		a.headDim = a.hidden / a.heads
	}
	if a.eps == 0 {
		a.eps = 1e-12 // BertConfig's default
	}
	if a.ctx == 0 {
		a.ctx = 512
	}
	if act := t.HiddenAct; act != "" && act != "gelu" {
		return a, fmt.Errorf("%s: hidden_act %q: the CPU engine's BERT runs gelu (erf) only", c.Path, act)
	}
	if err := checkDims(&a, c.Path, hfDimNames(c), -1); err != nil {
		return a, err
	}
	if a.headDim*a.heads != a.hidden {
		return a, fmt.Errorf("%s: hidden_size %d is not a multiple of num_attention_heads %d; fix one of them", c.Path, a.hidden, a.heads)
	}
	return a, nil
}

// loadBertSafetensors reads a BertModel checkpoint directory.
func loadBertSafetensors(dir string, cfg *hfconfig.Config) (*model, error) {
	a, err := bertArch(cfg)
	if err != nil {
		return nil, err
	}
	types := max(cfg.Text().TypeVocabSize, 1)
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	m := &model{arch: a, closers: []ioCloser{ck}, enc: &encoder{}}
	m.info.Format = "safetensors"
	m.info.Name = filepath.Base(dir)
	if err := m.loadBertST(ck, types); err != nil {
		ck.Close()
		return nil, err
	}
	if err := m.loadTokenizer(dir); err != nil {
		ck.Close()
		return nil, err
	}
	m.pooling = dirPooling(dir, engine.PoolMean)
	m.info.Quantization = m.enc.layers[0].up.format()
	return m, nil
}

func (m *model) loadBertST(ck *safetensors.Checkpoint, types int) error {
	a, enc := &m.arch, m.enc
	l := stLoader{ck: ck, dir: ck.Dir}
	ts := ck.Tensors()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	lay, err := hflayout.DetectBert(names)
	if err != nil {
		return fmt.Errorf("%s: %w", ck.Dir, err)
	}
	word, err := l.matrix(lay.Name(hflayout.WordEmbedding), a.vocab, a.hidden)
	if err != nil {
		return err
	}
	m.w.embed = word
	if enc.pos, err = l.matrix(lay.Name(hflayout.PositionEmbedding), a.ctx, a.hidden); err != nil {
		return err
	}
	if enc.typ, err = l.matrix(lay.Name(hflayout.TokenTypeEmbedding), types, a.hidden); err != nil {
		return err
	}
	if enc.normW, err = l.vec(lay.Name(hflayout.EmbedNorm), a.hidden); err != nil {
		return err
	}
	if enc.normB, err = l.vec(lay.Name(hflayout.EmbedNormBias), a.hidden); err != nil {
		return err
	}
	enc.layers = make([]bertLayer, a.layers)
	for i := range enc.layers {
		L := &enc.layers[i]
		name := func(k hflayout.Kind) string { return lay.LayerName(i, k) }
		for _, mt := range L.matrices(a) {
			if *mt.dst, err = l.matrix(name(mt.kind), mt.rows, mt.cols); err != nil {
				return err
			}
		}
		for _, vt := range L.vectors(a) {
			if *vt.dst, err = l.vec(name(vt.kind), vt.n); err != nil {
				return err
			}
		}
	}
	return nil
}

// bertMatrix and bertVector are one layer's tensors, for the loaders.
type bertMatrix struct {
	dst        *linear
	kind       hflayout.Kind
	gguf       string // llama.cpp's name after "blk.N."
	rows, cols int
}

type bertVector struct {
	dst  *[]float32
	kind hflayout.Kind
	gguf string
	n    int
}

func (L *bertLayer) matrices(a *arch) []bertMatrix {
	H, F := a.hidden, a.ffn
	return []bertMatrix{
		{&L.q, hflayout.Q, "attn_q", H, H}, {&L.k, hflayout.K, "attn_k", H, H}, {&L.v, hflayout.V, "attn_v", H, H},
		{&L.o, hflayout.O, "attn_output", H, H}, {&L.up, hflayout.Up, "ffn_up", F, H}, {&L.down, hflayout.Down, "ffn_down", H, F},
	}
}

func (L *bertLayer) vectors(a *arch) []bertVector {
	H, F := a.hidden, a.ffn
	return []bertVector{
		{&L.qb, hflayout.QBias, "attn_q.bias", H}, {&L.kb, hflayout.KBias, "attn_k.bias", H}, {&L.vb, hflayout.VBias, "attn_v.bias", H},
		{&L.ob, hflayout.OBias, "attn_output.bias", H}, {&L.upb, hflayout.UpBias, "ffn_up.bias", F}, {&L.downb, hflayout.DownBias, "ffn_down.bias", H},
		{&L.attnNormW, hflayout.AttnOutNorm, "attn_output_norm.weight", H}, {&L.attnNormB, hflayout.AttnOutNormBias, "attn_output_norm.bias", H},
		{&L.outNormW, hflayout.OutNorm, "layer_output_norm.weight", H}, {&L.outNormB, hflayout.OutNormBias, "layer_output_norm.bias", H},
	}
}

// loadBertGGUF reads a GGUF of arch "bert" in llama.cpp's tensor names
// (token_embd, position_embd, token_types, token_embd_norm; per block
// attn_q/k/v, attn_output, attn_output_norm, ffn_up, ffn_down,
// layer_output_norm, each with a bias).
func loadBertGGUF(g *gguf.File) (*model, error) {
	const an = "bert"
	a := arch{name: an, bos: -1, ropeTheta: 10000}
	for _, f := range []struct {
		dst *int
		key string
	}{
		{&a.hidden, "embedding_length"}, {&a.layers, "block_count"}, {&a.ffn, "feed_forward_length"},
		{&a.heads, "attention.head_count"}, {&a.ctx, "context_length"},
	} {
		v, err := g.Int(an + "." + f.key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.Path, err)
		}
		*f.dst = int(v)
	}
	a.kvHeads = a.heads
	if a.heads > 0 {
		a.headDim = a.hidden / a.heads
	}
	a.eps = 1e-12
	if eps, err := g.Float(an + ".attention.layer_norm_epsilon"); err == nil {
		a.eps = float32(eps)
	}
	emb, ok := g.Tensor("token_embd.weight")
	if !ok || len(emb.Ne) != 2 {
		return nil, fmt.Errorf("%s: tensor token_embd.weight is missing or not a matrix", g.Path)
	}
	a.vocab = int(emb.Ne[1])
	if err := checkDims(&a, g.Path, ggufDimNames(an), len(g.Tensors)); err != nil {
		return nil, err
	}
	if a.headDim*a.heads != a.hidden {
		return nil, fmt.Errorf("%s: bert.embedding_length %d is not a multiple of bert.attention.head_count %d", g.Path, a.hidden, a.heads)
	}
	m := &model{arch: a, enc: &encoder{}}
	enc, l := m.enc, ggufLoader{g}
	var err error
	if m.w.embed, err = l.embedding("token_embd.weight", a.vocab, a.hidden); err != nil {
		return nil, err
	}
	if enc.pos, err = l.floatTable("position_embd.weight", a.ctx, a.hidden); err != nil {
		return nil, err
	}
	types := 1
	if t, ok := g.Tensor("token_types.weight"); ok && len(t.Ne) == 2 {
		types = int(t.Ne[1])
	}
	if enc.typ, err = l.floatTable("token_types.weight", types, a.hidden); err != nil {
		return nil, err
	}
	if enc.normW, err = l.vec("token_embd_norm.weight", a.hidden); err != nil {
		return nil, err
	}
	if enc.normB, err = l.vec("token_embd_norm.bias", a.hidden); err != nil {
		return nil, err
	}
	enc.layers = make([]bertLayer, a.layers)
	for i := range enc.layers {
		L, p := &enc.layers[i], fmt.Sprintf("blk.%d.", i)
		for _, mt := range L.matrices(&a) {
			if *mt.dst, err = l.matrix(p+mt.gguf+".weight", mt.rows, mt.cols); err != nil {
				return nil, err
			}
		}
		for _, vt := range L.vectors(&a) {
			if *vt.dst, err = l.vec(p+vt.gguf, vt.n); err != nil {
				return nil, err
			}
		}
	}
	m.info.Name = strings.TrimSuffix(filepath.Base(g.Path), ".gguf")
	m.info.Format = "gguf"
	m.pooling = ggufPooling(g, engine.PoolMean)
	m.info.Quantization = enc.layers[0].up.format()
	return m, nil
}

// floatTable is a float embedding table (positions, token types) of a
// GGUF file: rows read one at a time.
func (l ggufLoader) floatTable(name string, rows, cols int) (*floatRows, error) {
	t, b, err := l.tensor(name, cols, rows)
	if err != nil {
		return nil, err
	}
	return l.floatRows(t, b, rows, cols)
}

// encoderModel finishes loading an encoder: its matrices moved into the
// model's memory as the decoder's are (memory.go), its description, and
// the engine.Model that only embeds.
func (m *model) encoderModel() engine.Model {
	enc := m.enc
	for _, fr := range []*floatRows{enc.pos, enc.typ} {
		m.ownRows(fr)
	}
	for i := range enc.layers {
		L := &enc.layers[i]
		for _, w := range []linear{L.q, L.k, L.v, L.o, L.up, L.down} {
			if fr, ok := w.(*floatRows); ok {
				m.ownRows(fr)
			}
		}
	}
	params, size := int64(m.arch.vocab+m.arch.ctx+enc.typ.r)*int64(m.arch.hidden), m.w.embed.size()+enc.pos.size()+enc.typ.size()
	for _, L := range enc.layers {
		for _, w := range []linear{L.q, L.k, L.v, L.o, L.up, L.down} {
			params += int64(w.rows()) * int64(w.cols())
			size += w.size()
		}
	}
	m.info.Parameters, m.info.SizeBytes = params, size
	m.info.EmbedOnly = true
	m.info.ChatTemplate = ""
	return &bertModel{m: m, packTokens: embedPackTokens}
}

// ownRows copies a float matrix out of the file mapping into the model's
// memory unless weights are served from the mapping (LoadOptions.Mmap).
func (m *model) ownRows(fr *floatRows) {
	fr.raw = m.mem.own(fr.raw)
	if fr.dt == "F32" {
		fr.f32 = viewF32(fr.raw, fr.r*fr.c)
	}
}

// loadBertGGUFFile is loadBertGGUF with the file's tokenizer: a
// tokenizer.json beside it, else the file's own vocabulary where the
// tokenizer package reads its kind (without one the model embeds token
// arrays only).
func loadBertGGUFFile(g *gguf.File) (*model, error) {
	m, err := loadBertGGUF(g)
	if err != nil {
		g.Close()
		return nil, err
	}
	m.closers = append(m.closers, g)
	if err := m.sidecarTokenizer(g.Path, nil); err != nil {
		g.Close()
		return nil, err
	}
	if m.tok == nil {
		_ = m.ggufTokenizer(g) // a WordPiece vocabulary the tokenizer does not read leaves token arrays
	}
	return m, nil
}
