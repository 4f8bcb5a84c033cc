package quant

import (
	"slices"
	"strings"

	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/internal/errkind"
)

// ggufMaxName is ggml's GGML_MAX_NAME: llama.cpp's GGUF loader refuses
// tensor names of this many bytes or more.
const ggufMaxName = 64

// ggufMaxDims is GGML_MAX_DIMS.
const ggufMaxDims = 4

// projectionKinds are the roles a tensors-only GGUF quantizes; every
// other tensor keeps its values (matrices F16/F32, the rest F32).
var projectionKinds = map[hflayout.Kind]bool{
	hflayout.Q: true, hflayout.K: true, hflayout.V: true, hflayout.O: true,
	hflayout.Gate: true, hflayout.Up: true, hflayout.Down: true,
}

// planBareGGUF plans a tensors-only GGUF from a safetensors file without
// config.json: every tensor under its own name and shape, projections
// (recognized by name) in gt.proj, no architecture, no Q/K permutation
// (that needs the head count) and no tokenizer. It warns that runtimes
// cannot load the result as a model.
func (p *packer) planBareGGUF(gt ggufTypes) ([]*ggufTensor, error) {
	var plan []*ggufTensor
	for _, name := range p.src.names() {
		f, st, _ := p.src.lookup(name)
		if strings.HasSuffix(name, ".weight_scale") {
			if _, ok := p.src.byName[strings.TrimSuffix(name, "_scale")]; ok {
				continue // folded into its packed U8 weight by source.linear
			}
		}
		if len(name) >= ggufMaxName {
			return nil, errkind.Errorf(errkind.Input, "%s: tensor %q: its name has %d bytes and GGUF (llama.cpp) allows at most %d; rename it in the safetensors file", f.Path, name, len(name), ggufMaxName-1)
		}
		if len(st.Shape) > ggufMaxDims {
			return nil, errkind.Errorf(errkind.Input, "%s: tensor %q has shape %v; GGUF holds at most %d dimensions", f.Path, name, st.Shape, ggufMaxDims)
		}
		_, kind, _ := hflayout.Parse(name)
		if len(st.Shape) != 2 {
			ne := slices.Clone(st.Shape)
			slices.Reverse(ne) // GGUF lists the contiguous dimension first
			if len(ne) == 0 {
				ne = []int64{1} // a scalar
			}
			plan = append(plan, p.vecTensor(name, name, ne))
			continue
		}
		var t *ggufTensor
		var err error
		if projectionKinds[kind] {
			var l *linear
			if l, err = p.src.linear(name); err == nil {
				t, err = p.projTensor(name, l, gt, nil)
			}
		} else {
			t, err = p.matTensor(name, name, gt.mat)
		}
		if err != nil {
			return nil, err
		}
		plan = append(plan, t)
	}
	if len(plan) == 0 {
		return nil, errkind.Errorf(errkind.Input, "%s holds no tensors: nothing to pack", p.opts.Input)
	}
	p.warn("%s has no config.json beside it: the GGUF holds the tensors only, without general.architecture or tokenizer metadata, so runtimes cannot load it as a model; to get one, pack the checkpoint directory that holds config.json (and tokenizer.json)", p.opts.Input)
	return plan, nil
}

// needsConfig refuses formats that cannot be written without config.json.
func needsConfig(opts Options, src *source) error {
	switch opts.Format {
	case FormatTQ2_0, FormatTQ1_0, FormatF16, FormatF32:
		return nil
	}
	if src.cfg != nil {
		return nil
	}
	why := "needs the model's dimensions from it"
	if opts.Format == FormatGPTQInt4 {
		why = "writes it, with quantization_config, into the output"
	}
	return errkind.Errorf(errkind.Input, "%s has no config.json beside it: --format %s %s; put the model's config.json beside the weights, or use tq2_0, tq1_0, f16 or f32 for a tensors-only GGUF", opts.Input, opts.Format, why)
}
