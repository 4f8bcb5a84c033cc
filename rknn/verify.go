package rknn

import (
	"context"
	"fmt"
	"math"
	"path/filepath"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/format/rknnchain"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/rknn/onnxeval"
)

// DefaultMinCosine is the end-to-end agreement verify asks for (the SHARD
// result: cosine 0.999 against FP32).
const DefaultMinCosine = 0.999

// VerifyOptions are edgectl rknn verify's inputs.
type VerifyOptions struct {
	Dir       string  // shard's -o directory
	Model     string  // the original .onnx
	Sample    string  // raw float32 input ("": the seeded normal one shard used)
	MinCosine float64 // default DefaultMinCosine
}

// VerifyReport compares the shard chain, evaluated as the NPU stores
// tensors (FP16 after every operator), with the original model in float64.
type VerifyReport struct {
	Dir         string  `json:"dir"`
	Model       string  `json:"model"`
	Sample      string  `json:"sample"`
	InputScale  float64 `json:"input_scale"`
	OutputScale float64 `json:"output_scale"`
	// Cosine is end to end: host ×input_scale, every shard in FP16,
	// host ×output_scale, against the float64 original.
	Cosine float64 `json:"cosine"`
	// UnshardedFP16Cosine is the original model evaluated in FP16 storage,
	// for comparison: what the NPU would compute without the rewrite.
	UnshardedFP16Cosine float64       `json:"unsharded_fp16_cosine"`
	MinCosine           float64       `json:"min_cosine"`
	BudgetBytes         int           `json:"budget_bytes"`
	MaxSoftmaxBytes     int           `json:"max_softmax_bytes"`
	Shards              []ShardReport `json:"shards"`
	OK                  bool          `json:"ok"`
	Problems            []string      `json:"problems,omitempty"`
}

// ShardReport is one shard's agreement with the original.
type ShardReport struct {
	File string `json:"file"`
	Core int    `json:"core"`
	Ops  int    `json:"ops"`
	// Cosine of its outputs in the chain (errors of earlier shards
	// included); IsolatedCosine when fed the original's float64 values
	// (its own FP16 error only).
	Cosine          float64 `json:"cosine"`
	IsolatedCosine  float64 `json:"isolated_cosine"`
	MaxAbs          float64 `json:"max_abs"`   // largest |x| of any tensor in the chain run
	NonFinite       int     `json:"nonfinite"` // tensors holding Inf or NaN in the chain run
	MaxSoftmaxBytes int     `json:"max_softmax_bytes"`
}

// Verify evaluates the original model (float64) and the shard chain (FP16
// storage) on the sample input and reports cosine similarity per shard and
// end to end. Problems (cosine under MinCosine, a Softmax over the budget,
// a non-finite value) make OK false; the error is for what stops the check.
func Verify(ctx context.Context, o VerifyOptions) (*VerifyReport, error) {
	if o.MinCosine == 0 {
		o.MinCosine = DefaultMinCosine
	}
	if o.Model == "" {
		return nil, errkind.Errorf(errkind.Usage, "pass --model MODEL.onnx, the model the shards were cut from")
	}
	m, err := rknnchain.Read(o.Dir)
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, err)
	}
	f, err := onnx.Open(o.Model)
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, err)
	}
	defer f.Close()
	g := newGraph(f.Model)
	if len(g.inputs) != 1 || len(m.Inputs) != 1 || g.inputs[0].Name != m.Inputs[0].Name {
		return nil, errkind.Errorf(errkind.Input, "%s does not match %s: its inputs are not the manifest's %v (pass the model the shards were cut from)", o.Model, filepath.Join(o.Dir, rknnchain.ManifestFile), names(m.Inputs))
	}
	x, sampleDesc, err := sampleInput(g.inputs[0], o.Sample)
	if err != nil {
		return nil, err
	}
	r := &VerifyReport{Dir: o.Dir, Model: o.Model, Sample: sampleDesc, InputScale: m.InputScale, OutputScale: m.OutputScale,
		MinCosine: o.MinCosine, BudgetBytes: m.Budget.Bytes}
	want := map[string]bool{}
	for _, s := range m.Shards {
		for _, t := range append(append([]rknnchain.TensorInfo{}, s.Inputs...), s.Outputs...) {
			want[t.Name] = true
		}
	}
	inName := g.inputs[0].Name
	ref, err := onnxeval.Run(ctx, f.Model, map[string]*onnxeval.Tensor{inName: x}, onnxeval.Options{Keep: func(n string) bool { return want[n] }})
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, fmt.Errorf("%s: %w", o.Model, err))
	}
	base, err := onnxeval.Run(ctx, f.Model, map[string]*onnxeval.Tensor{inName: x}, onnxeval.Options{FP16: true, Keep: func(string) bool { return false }})
	if err != nil {
		return nil, err
	}
	outName := m.Outputs[0].Name
	r.UnshardedFP16Cosine = onnxeval.Cosine(base[outName].Data, ref[outName].Data)

	chain := map[string]*onnxeval.Tensor{inName: scaleTensor(x, m.InputScale)}
	for _, s := range m.Shards {
		sr, err := verifyShard(ctx, o.Dir, s, chain, ref)
		if err != nil {
			return nil, err
		}
		r.MaxSoftmaxBytes = max(r.MaxSoftmaxBytes, sr.MaxSoftmaxBytes)
		if sr.MaxSoftmaxBytes > m.Budget.Bytes {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: a Softmax input is %d bytes in FP16, over the %d-byte budget", s.File, sr.MaxSoftmaxBytes, m.Budget.Bytes))
		}
		if sr.NonFinite > 0 {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %d tensors overflow FP16 (Inf/NaN)", s.File, sr.NonFinite))
		}
		r.Shards = append(r.Shards, *sr)
	}
	out := chain[outName]
	if out == nil {
		return nil, errkind.Errorf(errkind.Input, "%s: no shard produced the model output %q", o.Dir, outName)
	}
	r.Cosine = onnxeval.Cosine(scaleTensor(out, m.OutputScale).Data, ref[outName].Data)
	if r.Cosine < o.MinCosine {
		r.Problems = append(r.Problems, fmt.Sprintf("end-to-end cosine %.6f is under %.4g", r.Cosine, o.MinCosine))
	}
	r.OK = len(r.Problems) == 0
	return r, nil
}

// verifyShard runs one shard in FP16 on the chain's values (adding its
// outputs to chain) and on the original's values.
func verifyShard(ctx context.Context, dir string, s rknnchain.ShardEntry, chain, ref map[string]*onnxeval.Tensor) (*ShardReport, error) {
	p := filepath.Join(dir, s.File)
	f, err := onnx.Open(p)
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, err)
	}
	defer f.Close()
	softIn := map[string]bool{}
	for _, n := range f.Graph.Node {
		if n.OpType == "Softmax" {
			softIn[n.Input[0]] = true
		}
	}
	sr := &ShardReport{File: s.File, Core: s.Core, Ops: len(f.Graph.Node)}
	in := map[string]*onnxeval.Tensor{}
	iso := map[string]*onnxeval.Tensor{}
	for _, t := range s.Inputs {
		if in[t.Name] = chain[t.Name]; in[t.Name] == nil {
			return nil, errkind.Errorf(errkind.Input, "%s reads %q, which no earlier shard produced", p, t.Name)
		}
		if v := ref[t.Name]; v != nil {
			iso[t.Name] = scaleTensor(v, t.Scale)
		}
	}
	out, err := onnxeval.Run(ctx, f.Model, in, onnxeval.Options{FP16: true, Keep: func(string) bool { return false },
		Observe: func(name string, t *onnxeval.Tensor) {
			a := t.MaxAbs()
			if math.IsInf(a, 0) {
				sr.NonFinite++
			} else {
				sr.MaxAbs = max(sr.MaxAbs, a)
			}
			if softIn[name] {
				sr.MaxSoftmaxBytes = max(sr.MaxSoftmaxBytes, t.Bytes16())
			}
		}})
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, fmt.Errorf("%s: %w", p, err))
	}
	var isoOut map[string]*onnxeval.Tensor
	if len(iso) == len(s.Inputs) {
		if isoOut, err = onnxeval.Run(ctx, f.Model, iso, onnxeval.Options{FP16: true, Keep: func(string) bool { return false }}); err != nil {
			return nil, err
		}
	}
	var got, gotIso, want []float64
	for _, t := range s.Outputs {
		v := out[t.Name]
		if v == nil {
			return nil, errkind.Errorf(errkind.Input, "%s does not produce %q, which the manifest lists", p, t.Name)
		}
		chain[t.Name] = v
		if r := ref[t.Name]; r != nil && len(r.Data) == len(v.Data) {
			got, want = append(got, v.Data...), append(want, scaleTensor(r, t.Scale).Data...)
			if isoOut != nil {
				gotIso = append(gotIso, isoOut[t.Name].Data...)
			}
		}
	}
	sr.Cosine = onnxeval.Cosine(got, want)
	if isoOut != nil {
		sr.IsolatedCosine = onnxeval.Cosine(gotIso, want)
	}
	return sr, nil
}

func scaleTensor(t *onnxeval.Tensor, s float64) *onnxeval.Tensor {
	out := onnxeval.New(t.Shape, make([]float64, len(t.Data)))
	out.Int = t.Int
	for i, v := range t.Data {
		out.Data[i] = v * s
	}
	if t.Int {
		copy(out.Data, t.Data)
	}
	return out
}

func names(ts []rknnchain.TensorInfo) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
