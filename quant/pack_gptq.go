package quant

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/format/gptq"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
)

// isGPTQLinear reports a projection GPTQ quantizes: every 2-D
// `*_proj.weight` inside the decoder layers (llama/bitnet/qwen/mistral
// naming). Embeddings, norms and lm_head are copied unchanged.
func isGPTQLinear(lay hflayout.Layout, name string) bool {
	_, rest, ok := lay.LayerOf(name)
	return ok && strings.HasSuffix(rest, "_proj.weight")
}

// packGPTQ writes a checkpoint directory in AutoGPTQ's layout.
func (p *packer) packGPTQ(ctx context.Context) error {
	s := p.src
	if s.rawCfg == nil {
		return errkind.Errorf(errkind.Input, "%s has no config.json: gptq-int4 writes quantization_config into it", s.dir)
	}
	names := s.names()
	lay, err := hflayout.Detect(names)
	if err != nil {
		return errkind.Errorf(errkind.Input, "%s: %v", p.opts.Input, err)
	}
	var sources []safetensors.Source
	nLinear := 0
	for _, name := range names {
		f, t, _ := s.lookup(name)
		if strings.HasSuffix(name, ".weight_scale") {
			continue // folded into the dequantized weights
		}
		if !isGPTQLinear(lay, name) || len(t.Shape) != 2 {
			sources = append(sources, safetensors.Source{Name: name, DType: t.DType, Shape: t.Shape, WriteTo: f.CopyTensor(t)})
			continue
		}
		l, err := s.linear(name)
		if err != nil {
			return err
		}
		if l.k%8 != 0 || l.rows%8 != 0 {
			return errkind.Errorf(errkind.Input, "tensor %q [%d, %d]: GPTQ packs 8 weights per int32 along both dimensions, so in_features (%d) and out_features (%d) must be multiples of 8", name, l.rows, l.k, l.k, l.rows)
		}
		nLinear++
		sources = append(sources, p.gptqSources(ctx, l)...)
	}
	if nLinear == 0 {
		return errkind.Errorf(errkind.Input, "%s: no linear weights (%slayers.N.*_proj.weight) found: nothing to quantize", p.opts.Input, lay.Prefix)
	}
	p.res.Arch = s.rawCfg.Arch()

	dir, err := atomicfile.CreateDir(p.opts.Output)
	if err != nil {
		return err
	}
	defer dir.Abort()
	out, err := os.Create(filepath.Join(dir.Path, "model.safetensors"))
	if err != nil {
		return err
	}
	if err := safetensors.Write(out, map[string]string{"format": "pt", "quantized_by": "edgectl"}, sources); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	st, _ := out.Stat()
	out.Close()
	p.res.OutputBytes = st.Size()

	// config.json: the same bytes with quantization_config set.
	doc, err := hfconfig.ParseDoc(s.rawCfg.Raw)
	if err != nil {
		return fmt.Errorf("%s: %w", s.rawCfg.Path, err)
	}
	if err := doc.Set("quantization_config", DefaultGPTQConfig); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir.Path, "config.json"), doc.Bytes(), 0o644); err != nil {
		return err
	}
	qc, _ := json.MarshalIndent(DefaultGPTQConfig, "", "  ")
	if err := os.WriteFile(filepath.Join(dir.Path, "quantize_config.json"), append(qc, '\n'), 0o644); err != nil {
		return err
	}
	files := []string{"model.safetensors", "config.json", "quantize_config.json"}
	// Tokenizer and generation files travel with the model.
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || n == "config.json" || n == "quantize_config.json" || n == safetensors.IndexName || strings.HasSuffix(n, ".safetensors") || strings.HasPrefix(n, ".") {
			continue
		}
		ext := filepath.Ext(n)
		if ext != ".json" && ext != ".jinja" && ext != ".model" && ext != ".txt" && ext != ".tiktoken" {
			continue
		}
		if err := atomicfile.Copy(filepath.Join(s.dir, n), filepath.Join(dir.Path, n), 0o644); err != nil {
			return err
		}
		files = append(files, n)
	}
	if err := dir.Commit(); err != nil {
		return err
	}
	for _, f := range files {
		p.res.Files = append(p.res.Files, filepath.Join(p.opts.Output, f))
	}
	return nil
}

// gptqSources quantizes l lazily: qweight's WriteTo computes the tensor
// (all cores), scales' WriteTo writes and frees it. Only one projection's
// int4 codes (a quarter of its bf16 size) are in memory at a time.
func (p *packer) gptqSources(ctx context.Context, l *linear) []safetensors.Source {
	stem := strings.TrimSuffix(l.name, ".weight")
	n, k := l.rows, l.k
	var t *gptqTensor
	lay := gptqLayout(n, k)
	g := lay.Groups()
	qweight := func(w io.Writer) error {
		t = newGPTQTensor(n, k)
		_, err := p.transform(ctx, l, 0, nil, func(r int, x []float32, _ []int8, _ []byte) (float32, error) {
			sc := make([]uint16, g)
			if err := GPTQRowScales(sc, x); err != nil {
				return 0, err
			}
			q := make([]uint8, k)
			GPTQRowCodes(q, x, sc)
			t.putRow(r, q, sc)
			return 0, nil
		}, func([]byte) error { return nil })
		if err != nil {
			return err
		}
		p.res.Tensors = append(p.res.Tensors, TensorReport{Name: stem + ".qweight", Source: l.name, Type: "gptq-int4", Shape: lay.QWeightShape(), Method: "RTN symmetric, group 128"})
		_, err = w.Write(t.qweight)
		return err
	}
	qzeros := func(w io.Writer) error {
		b := make([]byte, 4*g*(n/8))
		zw := lay.ZeroWord(gptqZero)
		for i := 0; i < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], zw)
		}
		_, err := w.Write(b)
		return err
	}
	scales := func(w io.Writer) error {
		_, err := w.Write(t.scales)
		t = nil
		return err
	}
	gidx := func(w io.Writer) error {
		gIdx, err := lay.GroupIndex(nil) // desc_act false: input i in group i/128
		if err != nil {
			return err
		}
		b := make([]byte, 4*k)
		gptq.PutGroupIndex(b, gIdx)
		_, err = w.Write(b)
		return err
	}
	return []safetensors.Source{
		{Name: stem + ".qweight", DType: safetensors.I32, Shape: lay.QWeightShape(), WriteTo: qweight},
		{Name: stem + ".qzeros", DType: safetensors.I32, Shape: lay.QZerosShape(), WriteTo: qzeros},
		{Name: stem + ".scales", DType: safetensors.F16, Shape: lay.ScalesShape(), WriteTo: scales},
		{Name: stem + ".g_idx", DType: safetensors.I32, Shape: lay.GIdxShape(), WriteTo: gidx},
	}
}
