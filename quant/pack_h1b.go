package quant

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/edgectl/edgectl/format/h1b"
	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/failpoint"
	"github.com/edgectl/edgectl/sherry"
)

// packH1B writes a legacy .h1b (v2 HALO_V2, v3 Sherry, v4 base-3) and its
// .htok sidecar.
func (p *packer) packH1B(ctx context.Context) error {
	lay, err := p.loadModel()
	if err != nil {
		return err
	}
	d := p.dims
	version := map[string]int32{FormatHALO2: h1b.V2HALO2, FormatSherry: h1b.V3Sherry, FormatTQ1H: h1b.V4TQ1}[p.opts.Format]
	p.res.Ternarize = p.opts.Ternarize
	if d.headDim*d.heads != d.hidden {
		return errkind.Errorf(errkind.Input, "head_dim %d × num_attention_heads %d ≠ hidden_size %d: .h1b derives head_dim = hidden/heads and cannot describe this model", d.headDim, d.heads, d.hidden)
	}
	for l, m := range lay.layers {
		for _, k := range []string{"attn_sub_norm", "ffn_sub_norm"} {
			if _, ok := m[k]; !ok {
				return errkind.Errorf(errkind.Input, "layer %d has no %s (%s): .h1b holds BitNet models, whose layers have sub-norms", l, k, lay.hf.LayerName(l, hflayout.Kind(k)))
			}
		}
		for _, k := range []string{"q_bias", "k_bias", "v_bias", "o_bias"} {
			if hf, ok := m[k]; ok {
				return errkind.Errorf(errkind.Input, "tensor %q: .h1b has no place for biases", hf)
			}
		}
	}
	// Open and check every projection up front.
	lins := make([]map[string]*linear, d.layers)
	for i, m := range lay.layers {
		lins[i] = map[string]*linear{}
		for _, kind := range LinearKinds {
			l, err := p.src.linear(m[kind])
			if err != nil {
				return err
			}
			if err := p.checkShape(l, kind); err != nil {
				return err
			}
			if version == h1b.V3Sherry && l.k%sherry.RowAlign != 0 {
				return errkind.Errorf(errkind.Input, "tensor %q %v: rows of %d weights cannot be Sherry-packed, which needs a multiple of %d (element %d starts a partial group of 32)",
					l.name, l.fromShape, l.k, sherry.RowAlign, l.k-l.k%sherry.RowAlign)
			}
			lins[i][kind] = l
		}
	}
	if version == h1b.V3Sherry && (d.hidden%128 != 0 || d.inter%128 != 0) {
		p.warn("hidden_size %d / intermediate_size %d is not a multiple of 128: the .h1b loader accepts it, but 1bit-systems' int8 Sherry kernel reads 128 weights at a time (formats.md §7)", d.hidden, d.inter)
	}
	hdr := h1b.Header{Version: version, HiddenSize: int32(d.hidden), IntermediateSize: int32(d.inter), NumLayers: int32(d.layers),
		NumHeads: int32(d.heads), NumKVHeads: int32(d.kvHeads), VocabSize: int32(d.vocab), MaxSeqLen: int32(min(d.ctx, h1b.MaxSeqLenLimit)),
		RopeTheta: float32(d.theta), RMSNormEps: float32(d.eps)}
	if d.tied {
		hdr.TieEmbeddings = 1
	}
	if err := hdr.Validate(); err != nil {
		return errkind.Errorf(errkind.Input, "config.json does not fit an .h1b header: %v", err)
	}

	var tok *h1b.Tokenizer
	if ti, err := p.loadTokenizer(d.vocab); err != nil {
		return err
	} else if ti == nil {
		p.warn("%s has no tokenizer.json: no .htok sidecar written", p.src.dir)
	} else if tok, err = ti.htok(); err != nil {
		return err
	}

	f, err := atomicfile.CreateOutput(p.opts.Output, 0o644, p.opts.Stdout)
	if err != nil {
		return err
	}
	defer f.Abort()
	w, err := h1b.NewWriter(f, hdr)
	if err != nil {
		return err
	}
	// writeMatrixF32 streams a float matrix as f32 rows into tensor name,
	// or after the last layer when name is "lm_head" (the untied head).
	writeMatrixF32 := func(name, hf string) error {
		l, err := p.src.linear(hf)
		if err != nil {
			return err
		}
		_, err = p.transform(ctx, l, 4*l.k, nil, func(r int, x []float32, _ []int8, dst []byte) (float32, error) {
			if i := checkFinite(x); i >= 0 {
				return 0, &RowError{i, fmt.Sprintf("value %v is not finite (NaN/Inf); the checkpoint is corrupt", x[i])}
			}
			for i, v := range x {
				putF32(dst[4*i:], v)
			}
			return 0, nil
		}, func(b []byte) error {
			if name == "lm_head" {
				return w.WriteTrailer(b)
			}
			return w.WriteF32Bytes(name, b)
		})
		p.res.Tensors = append(p.res.Tensors, TensorReport{Name: name, Source: hf, Type: "F32", Shape: []int64{int64(l.rows), int64(l.k)}})
		return err
	}
	writeVec := func(name, hf string) error {
		v, err := p.src.vector(hf)
		if err != nil {
			return err
		}
		p.res.Tensors = append(p.res.Tensors, TensorReport{Name: name, Source: hf, Type: "F32", Shape: []int64{int64(len(v))}})
		return w.WriteF32(name, v)
	}
	if err := writeMatrixF32("embedding", lay.model["embedding"]); err != nil {
		return err
	}
	if err := writeVec("final_norm", lay.model["final_norm"]); err != nil {
		return err
	}
	for i, m := range lay.layers {
		pre := fmt.Sprintf("layers.%d.", i)
		for _, k := range []string{"input_norm", "post_attn_norm", "attn_sub_norm", "ffn_sub_norm"} {
			if err := writeVec(pre+k, m[k]); err != nil {
				return err
			}
		}
		for _, kind := range LinearKinds {
			if err := p.writePacked(ctx, w, version, pre+kind, lins[i][kind]); err != nil {
				return err
			}
		}
	}
	if !d.tied {
		p.warn("untied lm_head appended as f32 after the last layer; legacy .h1b loaders ignore it and use the embedding")
		if err := writeMatrixF32("lm_head", lay.model["lm_head"]); err != nil {
			return err
		}
	}
	if err := w.Finish(); err != nil {
		return err
	}
	out := []string{p.opts.Output}
	var tf *atomicfile.File
	if tok != nil && f.Streaming {
		p.warn("-o %s is a stream (device, FIFO or stdout): no .htok sidecar written beside it", p.opts.Output)
	} else if tok != nil {
		path := htokPath(p.opts.Output)
		if tf, err = atomicfile.Create(path, 0o644); err != nil {
			return err
		}
		defer tf.Abort()
		if _, err := tok.WriteTo(tf); err != nil {
			return err
		}
		out = append(out, path)
	}
	if err := f.Commit(); err != nil {
		return err
	}
	if tf != nil {
		if err := tf.Commit(); err != nil {
			return err
		}
	}
	p.res.OutputBytes = f.Written()
	p.res.Files = out
	return nil
}

// writePacked ternarizes and packs one projection, then writes its
// per-row scales.
func (p *packer) writePacked(ctx context.Context, w *h1b.Writer, version int32, name string, l *linear) error {
	var pl *plan
	method := "sherry projection of the source floats"
	if p.opts.Ternarize != TernarizeNone {
		var err error
		if pl, err = p.scan(ctx, l); err != nil {
			return err
		}
		method = pl.describe()
	}
	rb, err := h1b.RowBytes(version, l.k)
	if err != nil {
		return err
	}
	var changed atomic.Int64 // Sherry: ternary lanes the 3:4 projection altered
	scales, err := p.transform(ctx, l, rb, nil, func(r int, x []float32, q []int8, dst []byte) (float32, error) {
		if pl == nil { // --ternarize none: Sherry's own projection, α = mean |kept w|
			if i := checkFinite(x); i >= 0 {
				return 0, &RowError{i, fmt.Sprintf("value %v is not finite (NaN/Inf); the checkpoint is corrupt", x[i])}
			}
			if err := sherry.PackRow(dst, x); err != nil {
				return 0, err
			}
			sherry.UnpackRow(q, dst)
			var sum float64
			n := 0
			for i, c := range q {
				if c != 0 {
					sum += absf(x[i])
					n++
				}
			}
			if n == 0 {
				return 0, nil
			}
			return float32(sum / float64(n)), nil
		}
		s := pl.rowCodes(r, x, q)
		switch version {
		case h1b.V2HALO2:
			PackRowHALO2(dst, q)
		case h1b.V4TQ1:
			PackRowTQ1H(dst, q)
		case h1b.V3Sherry:
			n, err := sherry.PackTernaryRow(dst, q)
			if err != nil {
				return 0, err
			}
			changed.Add(int64(n))
		}
		return s, nil
	}, func(b []byte) error { return w.WritePacked(name, b) })
	if err != nil {
		return err
	}
	if version == h1b.V3Sherry && pl != nil {
		frac := float64(changed.Load()) / float64(l.rows*l.k)
		method += fmt.Sprintf("; 3:4 projection changed %.2f%% of weights", 100*frac)
		if frac > 0.05 {
			// Projecting the master floats loses less than projecting their
			// absmean codes (bitnet-ternary-tiny: perplexity ×1.42 against
			// ×3.02, docs/engine.md "Perplexity of the packed formats").
			p.warn("tensor %q: the Sherry 3:4 projection changed %.1f%% of its ternary weights (over 5%%); expect quality loss (from float master weights, --ternarize none projects the floats and loses less)", l.name, 100*frac)
		}
	}
	p.res.Tensors = append(p.res.Tensors, TensorReport{Name: name, Source: l.name, Type: h1b.Packing(version), Shape: []int64{int64(l.rows), int64(l.k)}, Method: method})
	failpoint.Hit("quant.tensor") // crash tests: kill -9 with the output half written
	return w.WriteScales(name, scales)
}

func absf(v float32) float64 {
	if v < 0 {
		return float64(-v)
	}
	return float64(v)
}
