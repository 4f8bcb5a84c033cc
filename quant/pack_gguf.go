package quant

import (
	"context"
	"fmt"
	"math"

	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/failpoint"
)

// ggufTensor is one planned output tensor and how to produce its bytes.
type ggufTensor struct {
	name, hf string
	typ      gguf.Type
	ne       []int64
	write    func(ctx context.Context, w *gguf.Writer) error
	method   string
}

// ggufTypes is what one GGUF --format stores: projections as proj (via
// quantize when ternary), other matrices as mat, vectors as F32.
type ggufTypes struct {
	proj, mat gguf.Type
	ftype     uint32
	quantize  func([]byte, []float32) error
}

func (g ggufTypes) ternary() bool { return g.proj == gguf.TypeTQ1_0 || g.proj == gguf.TypeTQ2_0 }

func ggufTypesOf(format string) ggufTypes {
	switch format {
	case FormatTQ1_0:
		return ggufTypes{gguf.TypeTQ1_0, gguf.TypeF16, gguf.FileTypeTQ1_0, QuantizeRowTQ1_0}
	case FormatF16:
		return ggufTypes{gguf.TypeF16, gguf.TypeF16, gguf.FileTypeMostlyF16, nil}
	case FormatF32:
		return ggufTypes{gguf.TypeF32, gguf.TypeF32, gguf.FileTypeAllF32, nil}
	}
	return ggufTypes{gguf.TypeTQ2_0, gguf.TypeF16, gguf.FileTypeTQ2_0, QuantizeRowTQ2_0}
}

// vecTensor plans a float tensor read whole and stored F32 (norms,
// biases; in a tensors-only file every tensor that is not a matrix).
func (p *packer) vecTensor(gname, hf string, ne []int64) *ggufTensor {
	return &ggufTensor{name: gname, hf: hf, typ: gguf.TypeF32, ne: ne, write: func(ctx context.Context, w *gguf.Writer) error {
		v, err := p.src.vector(hf)
		if err != nil {
			return err
		}
		b := make([]byte, 4*len(v))
		for i, x := range v {
			putF32(b[4*i:], x)
		}
		_, err = w.Write(b)
		p.progress(int64(len(v)) * 2)
		return err
	}}
}

// matTensor plans an unquantized matrix (embedding, untied output, other
// matrices of a tensors-only file) stored as typ (F16 or F32).
func (p *packer) matTensor(gname, hf string, typ gguf.Type) (*ggufTensor, error) {
	l, err := p.src.linear(hf)
	if err != nil {
		return nil, err
	}
	if l.packed {
		return nil, errkind.Errorf(errkind.Input, "tensor %q is packed ternary; only projection weights may be", hf)
	}
	return &ggufTensor{name: gname, hf: hf, typ: typ, ne: []int64{int64(l.k), int64(l.rows)},
		write: func(ctx context.Context, w *gguf.Writer) error { return p.writeFloat(ctx, l, nil, typ, w, nil) }}, nil
}

// projTensor plans a projection weight stored as gt.proj; order permutes
// its rows (nil: as stored).
func (p *packer) projTensor(gname string, l *linear, gt ggufTypes, order []int) (*ggufTensor, error) {
	if gt.ternary() && l.k%QK != 0 {
		return nil, errkind.Errorf(errkind.Input, "tensor %q %v: rows of %d weights cannot be %s, which packs blocks of %d along the input dimension (element %d starts a partial block); use --format sherry/halo2/tq1h or gptq-int4",
			l.name, l.fromShape, l.k, gt.proj, QK, l.k-l.k%QK)
	}
	t := &ggufTensor{name: gname, hf: l.name, typ: gt.proj, ne: []int64{int64(l.k), int64(l.rows)}}
	t.write = func(ctx context.Context, w *gguf.Writer) error {
		if !gt.ternary() {
			// A BitNet projection in F16/F32 holds its ternarized values,
			// as llama.cpp's converter writes them (weight_quant): runtimes
			// run float weights as they are, and the masters are not the
			// model (bitnet-ternary-tiny: perplexity 4.62 against 2.83).
			var pl *plan
			if p.src.arch == "bitnet" && p.opts.Ternarize != TernarizeNone {
				var err error
				if pl, err = p.scan(ctx, l); err != nil {
					return err
				}
				t.method = pl.describe()
			}
			return p.writeFloat(ctx, l, order, gt.proj, w, pl)
		}
		return p.writeTQ(ctx, l, order, gt.quantize, gt.proj, w, t)
	}
	return t, nil
}

// packGGUF writes a llama/bitnet GGUF with TQ1_0/TQ2_0 projections, or,
// from a safetensors file without config.json, a tensors-only GGUF.
func (p *packer) packGGUF(ctx context.Context) error {
	gt := ggufTypesOf(p.opts.Format)
	if gt.ternary() {
		p.res.Ternarize = p.opts.Ternarize
	}
	if p.src.cfg == nil {
		plan, err := p.planBareGGUF(gt)
		if err != nil {
			return err
		}
		return p.writeGGUF(ctx, plan, func(set func(string, any)) {
			set("general.name", modelName(p.opts.Input))
			set("general.file_type", gt.ftype)
			set("general.quantization_version", uint32(2))
			set("general.alignment", uint32(gguf.DefaultAlignment))
		})
	}
	lay, err := p.loadModel()
	if err != nil {
		return err
	}
	arch := p.src.arch
	if arch == "" {
		return errkind.Errorf(errkind.Input, "%s: config.json architecture %q is not supported for GGUF output (llama, bitnet)", p.src.dir, p.src.cfg.Arch())
	}
	d := p.dims

	// Plan every tensor first, so format errors (row lengths) surface
	// before a byte is written.
	var plan []*ggufTensor
	addMat := func(gname, hf string) error {
		t, err := p.matTensor(gname, hf, gt.mat)
		if err == nil {
			plan = append(plan, t)
		}
		return err
	}
	if err := addMat("token_embd.weight", lay.model["embedding"]); err != nil {
		return err
	}
	plan = append(plan, p.vecTensor("output_norm.weight", lay.model["final_norm"], nil))
	switch {
	case !d.tied && arch == "bitnet":
		// llama.cpp's bitnet graph has no output tensor (the head is
		// token_embd) and refuses files with unexpected tensors. Warned
		// below, once the plan holds.
	case !d.tied:
		if err := addMat("output.weight", lay.model["lm_head"]); err != nil {
			return err
		}
	}
	for _, m := range lay.layers {
		for _, kind := range []string{"input_norm", "post_attn_norm", "attn_sub_norm", "ffn_sub_norm", "q_bias", "k_bias", "v_bias", "o_bias"} {
			if hf, ok := m[kind]; ok {
				gname, _ := GGUFName(hf)
				plan = append(plan, p.vecTensor(gname, hf, nil))
			}
		}
		for _, kind := range LinearKinds {
			hf := m[kind]
			l, err := p.src.linear(hf)
			if err != nil {
				return err
			}
			if err := p.checkShape(l, kind); err != nil {
				return err
			}
			var order []int
			if arch == "llama" && (kind == "q" || kind == "k") {
				heads := d.heads
				if kind == "k" {
					heads = d.kvHeads
				}
				order = PermuteQK(l.rows, heads)
			}
			gname, _ := GGUFName(hf)
			t, err := p.projTensor(gname, l, gt, order)
			if err != nil {
				return err
			}
			plan = append(plan, t)
		}
	}
	if !d.tied && arch == "bitnet" {
		p.warn("untied lm_head.weight not written: llama.cpp's bitnet architecture uses token_embd as the LM head and rejects an output.weight")
	}
	// Vectors learn their shape from the header (cheap) to declare ne.
	for _, t := range plan {
		if t.ne == nil {
			_, st, _ := p.src.lookup(t.hf)
			t.ne = []int64{st.Elements()}
		}
	}

	tok, err := p.loadTokenizer(d.vocab)
	if err != nil {
		return err
	}
	if tok == nil {
		p.warn("%s has no tokenizer.json: the GGUF has no tokenizer.ggml.* metadata and llama.cpp will refuse to load it", p.src.dir)
	}
	if d.act == "relu2" {
		p.warn("%s.hidden_activation = relu2 written; stock llama.cpp builds may ignore it and run the FFN with SiLU (formats.md §3)", arch)
	}
	return p.writeGGUF(ctx, plan, func(set func(string, any)) {
		set("general.architecture", arch)
		set("general.name", modelName(p.opts.Input))
		set("general.file_type", gt.ftype)
		set("general.quantization_version", uint32(2))
		set("general.alignment", uint32(gguf.DefaultAlignment))
		set(arch+".vocab_size", uint32(d.vocab))
		set(arch+".context_length", uint32(d.ctx))
		set(arch+".embedding_length", uint32(d.hidden))
		set(arch+".block_count", uint32(d.layers))
		set(arch+".feed_forward_length", uint32(d.inter))
		set(arch+".attention.head_count", uint32(d.heads))
		set(arch+".attention.head_count_kv", uint32(d.kvHeads))
		set(arch+".attention.layer_norm_rms_epsilon", float32(d.eps))
		set(arch+".rope.freq_base", float32(d.theta))
		set(arch+".rope.dimension_count", uint32(d.headDim))
		if d.headDim*d.heads != d.hidden {
			set(arch+".attention.key_length", uint32(d.headDim))
			set(arch+".attention.value_length", uint32(d.headDim))
		}
		if arch == "bitnet" {
			set("bitnet.rope.scaling.type", "linear")
			set("bitnet.rope.scaling.factor", float32(1))
		}
		if d.act == "relu2" {
			set(arch+".hidden_activation", "relu2")
		}
		if tok != nil {
			for _, kv := range tok.ggufKVs() {
				set(kv[0].(string), kv[1])
			}
		}
	})
}

// writeGGUF writes the metadata meta sets and the planned tensors to
// opts.Output atomically.
func (p *packer) writeGGUF(ctx context.Context, plan []*ggufTensor, meta func(set func(string, any))) error {
	f, err := atomicfile.CreateOutput(p.opts.Output, 0o644, p.opts.Stdout)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := gguf.NewWriter(f)
	meta(func(k string, v any) {
		if err == nil {
			err = w.Set(k, v)
		}
	})
	if err != nil {
		return err
	}
	for _, t := range plan {
		if err := w.AddTensor(t.name, t.typ, t.ne...); err != nil {
			return err
		}
	}
	if err := w.WriteHeader(); err != nil {
		return err
	}
	for _, t := range plan {
		if err := t.write(ctx, w); err != nil {
			return err
		}
		if cur := w.Current(); cur == t.name {
			return fmt.Errorf("internal: tensor %s was not written in full", t.name)
		}
		p.res.Tensors = append(p.res.Tensors, TensorReport{Name: t.name, Source: t.hf, Type: t.typ.String(), Shape: t.ne, Method: t.method})
		failpoint.Hit("quant.tensor") // crash tests: kill -9 with the output half written
	}
	if err := w.Finish(); err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	p.res.OutputBytes = f.Written()
	p.res.Files = []string{p.opts.Output}
	return nil
}

// writeTQ quantizes one projection. With --ternarize none the source
// floats go to the TQ quantizer unchanged (llama-quantize's behaviour);
// otherwise each row becomes scale·{−1,0,1} first, which TQ stores
// losslessly up to the fp16 rounding of the scale.
func (p *packer) writeTQ(ctx context.Context, l *linear, order []int, quantize func([]byte, []float32) error, qt gguf.Type, w *gguf.Writer, t *ggufTensor) error {
	var pl *plan
	if p.opts.Ternarize != TernarizeNone {
		var err error
		if pl, err = p.scan(ctx, l); err != nil {
			return err
		}
		t.method = pl.describe()
	} else {
		t.method = "none (" + qt.String() + " quantizer on the source floats)"
	}
	rb := int(qt.RowSize(int64(l.k)))
	_, err := p.transform(ctx, l, rb, order, func(r int, x []float32, q []int8, dst []byte) (float32, error) {
		if pl != nil {
			s := pl.rowCodes(r, x, q)
			return 0, QuantizeTernaryRow(dst, q, s, qt == gguf.TypeTQ1_0)
		}
		return 0, quantize(dst, x)
	}, func(b []byte) error { _, err := w.Write(b); return err })
	return err
}

// writeFloat converts a float matrix to F16 or F32 (embedding, untied
// output, unquantized projections), rejecting NaN/Inf and values F16
// cannot hold; with a plan, each row as its scale·{−1, 0, 1}.
func (p *packer) writeFloat(ctx context.Context, l *linear, order []int, typ gguf.Type, w *gguf.Writer, pl *plan) error {
	size := 2
	if typ == gguf.TypeF32 {
		size = 4
	}
	_, err := p.transform(ctx, l, size*l.k, order, func(r int, x []float32, q []int8, dst []byte) (float32, error) {
		if pl != nil { // scan has checked the values
			s := pl.rowCodes(r, x, q)
			for i, c := range q {
				x[i] = s * float32(c)
			}
		}
		for i, v := range x {
			if !(abs32(v) <= math.MaxFloat32) {
				return 0, &RowError{i, fmt.Sprintf("value %v is not finite (NaN/Inf); the checkpoint is corrupt", v)}
			}
			if size == 2 && abs32(v) > 65504 {
				return 0, &RowError{i, fmt.Sprintf("value %g overflows F16 (max 65504); use --format f32", v)}
			}
		}
		if size == 2 {
			half.EncodeF16(dst, x)
		} else {
			for i, v := range x {
				putF32(dst[4*i:], v)
			}
		}
		return 0, nil
	}, func(b []byte) error { _, err := w.Write(b); return err })
	return err
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}
