package cpu

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/tokenizer"
	"github.com/edgectl/edgectl/format/chattemplate"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/format/safetensors"
)

// archFromConfig maps a Hugging Face config onto the engine's architecture.
func archFromConfig(c *hfconfig.Config) (arch, error) {
	t := c.Text()
	a := arch{
		hidden: t.HiddenSize, ffn: t.IntermediateSize, layers: t.NumHiddenLayers,
		heads: t.NumAttentionHeads, kvHeads: t.KVHeads(), headDim: t.HeadDimension(),
		vocab: t.VocabSize, ctx: t.MaxPositionEmbeddings, eps: float32(t.RMSNormEps),
		ropeTheta: t.RopeTheta, bos: -1,
	}
	mt := strings.ToLower(t.ModelType)
	switch mt {
	case "llama", "mistral":
		a.name = "llama"
	case "qwen2":
		a.name, a.bias = "qwen2", true
	case "qwen3":
		a.name, a.qkNorm = "qwen3", true
	case "bitnet":
		a.name, a.subNorm, a.relu2 = "bitnet", true, true
	default:
		return a, fmt.Errorf("%s: model_type %q: %w (the CPU engine runs llama, qwen2, qwen3 and bitnet)", c.Path, t.ModelType, engine.ErrUnsupported)
	}
	if t.AttentionBias != nil {
		a.bias = *t.AttentionBias
	}
	if t.HiddenAct == "relu2" {
		a.relu2 = true
	}
	if a.eps == 0 {
		a.eps = 1e-6
	}
	if a.ropeTheta == 0 {
		a.ropeTheta = 10000
	}
	if a.ctx == 0 {
		a.ctx = 2048
	}
	// Sizes are checked before anything is made from them (the rope
	// tables below, the layer table, the KV cache).
	if err := checkDims(&a, c.Path, hfDimNames(c), -1); err != nil {
		return a, err
	}
	if rs := t.RopeScaling; rs != nil {
		typ, _ := rs["rope_type"].(string)
		if typ == "" {
			typ, _ = rs["type"].(string)
		}
		f, _ := rs["factor"].(float64)
		switch typ {
		case "llama3":
			lo, _ := rs["low_freq_factor"].(float64)
			hi, _ := rs["high_freq_factor"].(float64)
			orig, _ := rs["original_max_position_embeddings"].(float64)
			a.ropeFactors = llama3Factors((&arch{headDim: a.headDim, ropeTheta: a.ropeTheta}).ropeFreqs(), f, lo, hi, orig)
		case "linear":
			a.ropeLinear = f
		case "default", "":
		default:
			return a, fmt.Errorf("%s: rope_scaling type %q is not supported by the CPU engine (supported: llama3, linear)", c.Path, typ)
		}
	}
	a.eos = append(a.eos, t.EosTokenID...)
	if len(t.BosTokenID) > 0 {
		a.bos = t.BosTokenID[0]
	}
	return a, nil
}

func loadSafetensors(dir string) (*model, error) {
	cfg, err := hfconfig.Load(dir)
	if err != nil {
		return nil, err
	}
	if isEncoderConfig(cfg.Text()) {
		return loadBertSafetensors(dir, cfg) // bert_load.go
	}
	a, err := archFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	if g, err := hfconfig.Load(filepath.Join(dir, "generation_config.json")); err == nil {
		a.eos = append(a.eos, g.EosTokenID...)
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if err := checkDims(&a, cfg.Path, hfDimNames(cfg), len(ck.Tensors())); err != nil {
		ck.Close()
		return nil, err
	}
	m := &model{arch: a, closers: []ioCloser{ck}}
	m.info.Format = "safetensors"
	m.info.Name = filepath.Base(dir)
	if err := m.loadSTWeights(ck, cfg); err != nil {
		ck.Close()
		return nil, err
	}
	if err := m.loadTokenizer(dir); err != nil {
		ck.Close()
		return nil, err
	}
	m.info.Quantization = m.quantization()
	m.info.Parameters = m.params()
	m.pooling = dirPooling(dir, engine.PoolMean)
	return m, nil
}

type ioCloser = interface{ Close() error }

// loadTokenizer reads tokenizer.json and the chat template beside a model.
func (m *model) loadTokenizer(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		return nil // a model without a tokenizer can still be inspected
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return err
	}
	m.tok = tok
	m.arch.eos = dedupe(append(m.arch.eos, tok.EOS()...))
	if m.arch.bos < 0 {
		m.arch.bos = tok.BOS()
	}
	if src := tok.ChatTemplate(); src != "" {
		t, err := chattemplate.Parse(src)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err) // the error starts "chat template line N"
		}
		m.tmpl = t
	}
	return nil
}

func dedupe(ids []int) []int {
	seen := map[int]bool{}
	out := ids[:0]
	for _, id := range ids {
		if id >= 0 && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// stLoader resolves tensors of a checkpoint with errors that name them.
type stLoader struct {
	ck  *safetensors.Checkpoint
	dir string
}

func (l stLoader) tensor(name string, shape ...int) ([]byte, safetensors.Tensor, error) {
	f, t, ok := l.ck.Lookup(name)
	if !ok {
		return nil, t, fmt.Errorf("%s: tensor %q is missing (is this a complete checkpoint of the architecture config.json names?)", l.dir, name)
	}
	if len(t.Shape) != len(shape) {
		return nil, t, fmt.Errorf("%s: tensor %q has shape %v, expected %v from config.json", f.Path, name, t.Shape, shape)
	}
	for i, d := range shape {
		if t.Shape[i] != int64(d) {
			return nil, t, fmt.Errorf("%s: tensor %q has shape %v, expected %v from config.json", f.Path, name, t.Shape, shape)
		}
	}
	b, err := f.Bytes(t)
	return b, t, err
}

func (l stLoader) vec(name string, n int) ([]float32, error) {
	b, t, err := l.tensor(name, n)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if err := safetensors.DecodeFloat32(out, t.DType, b); err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", l.dir, name, err)
	}
	return out, nil
}

func (l stLoader) matrix(name string, rows, cols int) (*floatRows, error) {
	b, t, err := l.tensor(name, rows, cols)
	if err != nil {
		return nil, err
	}
	m, err := newFloatRows(b, string(t.DType), rows, cols)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", l.dir, name, err)
	}
	if f, _, ok := l.ck.Lookup(name); ok {
		m.release = func(off, n int64) { f.ReleaseRange(t, off, n) }
	}
	return m, nil
}

func (m *model) loadSTWeights(ck *safetensors.Checkpoint, cfg *hfconfig.Config) error {
	a := &m.arch
	l := stLoader{ck: ck, dir: ck.Dir}
	lay, err := hflayout.DetectCheckpoint(ck)
	if err != nil {
		return fmt.Errorf("%s: %w", ck.Dir, err)
	}
	tied := cfg.Text().Tied()
	embedName, err := lay.StoredEmbedding(tied)
	if err != nil {
		return fmt.Errorf("%s: %w", ck.Dir, err)
	}
	if m.w.embed, err = l.matrix(embedName, a.vocab, a.hidden); err != nil {
		return err
	}
	if m.w.norm, err = l.vec(lay.Name(hflayout.FinalNorm), a.hidden); err != nil {
		return err
	}
	headName, err := lay.StoredHead(tied)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", ck.Dir, err)
	case headName == "":
		m.w.head = m.w.embed
	default:
		if m.w.head, err = l.matrix(headName, a.vocab, a.hidden); err != nil {
			return err
		}
	}
	gq, err := newGPTQLoader(ck.Dir, cfg) // nil for a float checkpoint
	if err != nil {
		return err
	}
	hd, qd, kvd := a.headDim, a.heads*a.headDim, a.kvHeads*a.headDim
	m.w.layers = make([]layer, a.layers)
	for i := range a.layers {
		name := func(k hflayout.Kind) string { return lay.LayerName(i, k) }
		L := &m.w.layers[i]
		if L.attnNorm, err = l.vec(name(hflayout.InputNorm), a.hidden); err != nil {
			return err
		}
		if L.ffnNorm, err = l.vec(name(hflayout.PostAttnNorm), a.hidden); err != nil {
			return err
		}
		mats := []struct {
			dst        *linear
			kind       hflayout.Kind
			rows, cols int
		}{
			{&L.q, hflayout.Q, qd, a.hidden}, {&L.k, hflayout.K, kvd, a.hidden},
			{&L.v, hflayout.V, kvd, a.hidden}, {&L.o, hflayout.O, a.hidden, qd},
			{&L.gate, hflayout.Gate, a.ffn, a.hidden}, {&L.up, hflayout.Up, a.ffn, a.hidden},
			{&L.down, hflayout.Down, a.hidden, a.ffn},
		}
		for _, mt := range mats {
			if gq != nil {
				// q, k and v biases are the architecture's (below); another
				// projection's goes with its product.
				archBias := a.bias && (mt.kind == hflayout.Q || mt.kind == hflayout.K || mt.kind == hflayout.V)
				q, err := gq.matrix(l, name(mt.kind), mt.rows, mt.cols, !archBias)
				if err != nil {
					return err
				}
				if q != nil {
					*mt.dst = q
					continue
				}
			}
			fr, err := l.matrix(name(mt.kind), mt.rows, mt.cols)
			if err != nil {
				return err
			}
			if a.name == "bitnet" {
				*mt.dst = ternarize(fr)
			} else {
				*mt.dst = fr
			}
		}
		if a.bias {
			if L.qBias, err = l.vec(name(hflayout.QBias), qd); err != nil {
				return err
			}
			if L.kBias, err = l.vec(name(hflayout.KBias), kvd); err != nil {
				return err
			}
			if L.vBias, err = l.vec(name(hflayout.VBias), kvd); err != nil {
				return err
			}
		}
		if a.qkNorm {
			if L.qNorm, err = l.vec(name(hflayout.QNorm), hd); err != nil {
				return err
			}
			if L.kNorm, err = l.vec(name(hflayout.KNorm), hd); err != nil {
				return err
			}
		}
		if a.subNorm {
			if L.attnSubNorm, err = l.vec(name(hflayout.AttnSubNorm), qd); err != nil {
				return err
			}
			if L.ffnSubNorm, err = l.vec(name(hflayout.FFNSubNorm), a.ffn); err != nil {
				return err
			}
		}
	}
	return nil
}

// ternarize packs a float BitNet matrix as HALO_V2 rows with per-row
// scales, so the float checkpoint runs the same int8 kernels as the packed
// files. As `quant pack --ternarize auto` does, a row that is already
// ternary ({−α, 0, +α}) keeps its α exactly; other rows get BitNet's
// absmean rule with the tensor's s = max(mean|W|, 1e-5).
func ternarize(fr *floatRows) linear {
	rows, k := fr.r, fr.c
	row := make([]float32, k)
	alpha := make([]float32, rows)
	tern := make([]bool, rows)
	var sum float64
	for r := range rows {
		fr.row(r, row)
		a, ok := float32(0), true
		for _, v := range row {
			av := abs32(v)
			sum += float64(av)
			if av != 0 {
				if a == 0 {
					a = av
				} else if av != a {
					ok = false
				}
			}
		}
		alpha[r], tern[r] = a, ok
	}
	s := float32(max(sum/float64(rows*k), 1e-5))
	rb := (k + 3) / 4
	data := make([]byte, rows*rb)
	scales := make([]float32, rows)
	for r := range rows {
		fr.row(r, row)
		sc := s
		if tern[r] {
			sc = alpha[r]
		}
		scales[r] = sc
		for i, v := range row {
			w := 0
			if sc > 0 {
				w = int(max(-1, min(1, math.Round(float64(v/sc)))))
			}
			data[r*rb+i/4] |= byte(w+1) << (2 * (i % 4))
		}
		for i := k; i < rb*4; i++ {
			data[r*rb+i/4] |= 1 << (2 * (i % 4))
		}
	}
	l := newTernary("halo2", data, rows, k, scales)
	l.owned, l.from = true, fr.dt+" ternary"
	return l
}

// params counts parameters from the shapes.
func (m *model) params() int64 {
	a := m.arch
	n := int64(a.vocab) * int64(a.hidden)
	if m.w.head != linear(m.w.embed) {
		n *= 2
	}
	for _, L := range m.w.layers {
		for _, w := range []linear{L.q, L.k, L.v, L.o, L.gate, L.up, L.down} {
			n += int64(w.rows()) * int64(w.cols())
		}
	}
	return n
}
