package rknn

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/format/rknnchain"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/rknn/onnxeval"
)

// Defaults of edgectl rknn shard.
const (
	DefaultSRAMKB = 32 // the per-vector-operation scratchpad (../shared/docs/rknn.md §1)
	DefaultCores  = 3  // RK3588's NPU cores
)

// ShardOptions are edgectl rknn shard's inputs.
type ShardOptions struct {
	Model   string // the .onnx file (a torch.onnx opset ≥ 10 export)
	OutDir  string // must not exist
	SRAMKB  int    // tile budget per Softmax input, in KiB of FP16
	Cores   int    // NPU cores the shards are spread over, round-robin
	Barrier string // pill, rules, both or none
	Scale   string // "auto" (from the sample) or a number, 1 for none
	Sample  string // raw float32 input to calibrate with ("": seeded normal)
	Log     io.Writer
}

// ShardResult is what Shard wrote.
type ShardResult struct {
	OutDir   string              `json:"out_dir"`
	Manifest *rknnchain.Manifest `json:"manifest"`
	Scale    float64             `json:"scale"`
	// ScaleLimitedBy is the tensor whose calibrated max |x| chose s.
	ScaleLimitedBy string  `json:"scale_limited_by,omitempty"`
	MaxAbs         float64 `json:"scale_limited_max_abs,omitempty"`
	// RewriteCosine compares, in float64, the rewritten graph's output
	// (undone by output_scale) with the original's: 1 up to the poison
	// pill's 1e-6 and float32 rounding of rescaled constants.
	RewriteCosine float64 `json:"rewrite_cosine"`
}

func (o *ShardOptions) check() error {
	if o.SRAMKB == 0 {
		o.SRAMKB = DefaultSRAMKB
	}
	if o.Cores == 0 {
		o.Cores = DefaultCores
	}
	if o.Barrier == "" {
		o.Barrier = BarrierPill
	}
	if o.Scale == "" {
		o.Scale = "auto"
	}
	switch {
	case o.SRAMKB < 1 || o.SRAMKB > 1<<20:
		return errkind.Errorf(errkind.Usage, "--sram-kb %d: want 1 to %d KiB (RK3588: 32)", o.SRAMKB, 1<<20)
	case o.Cores < 1 || o.Cores > 64:
		return errkind.Errorf(errkind.Usage, "--cores %d: want 1 to 64 (RK3588: 3)", o.Cores)
	case !slices.Contains([]string{BarrierPill, BarrierRules, BarrierBoth, BarrierNone}, o.Barrier):
		return errkind.Errorf(errkind.Usage, "--barrier %q: want pill, rules, both or none", o.Barrier)
	}
	if o.Scale != "auto" {
		s, err := strconv.ParseFloat(o.Scale, 64)
		if err != nil || !(s > 0) || math.IsInf(s, 0) || s > 1e6 {
			return errkind.Errorf(errkind.Usage, "--scale %q: want auto or a positive number such as 0.0625", o.Scale)
		}
	}
	return nil
}

func (o *ShardOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// Shard rewrites an ONNX vision encoder for the RK3588 NPU (fold, sandwich
// scaling, attention tiling with barriers) and cuts it into shards, written
// with manifest.json into OutDir as a whole or not at all.
func Shard(ctx context.Context, o ShardOptions) (*ShardResult, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.OutDir == "" {
		return nil, errkind.Errorf(errkind.Usage, "pass -o OUT, the directory to write the shards into")
	}
	f, err := onnx.Open(o.Model)
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, err)
	}
	defer f.Close()
	g := newGraph(f.Model)
	if g.opset < 10 {
		return nil, errkind.Errorf(errkind.Input, "%s imports opset %d: the tiles need Slice with inputs (opset ≥ 10); export at opset 12", o.Model, g.opset)
	}
	if len(g.inputs) != 1 {
		return nil, errkind.Errorf(errkind.Input, "%s has %d graph inputs: edgectl rknn shard takes an encoder with one input (patch embeddings)", o.Model, len(g.inputs))
	}
	x, sampleDesc, err := sampleInput(g.inputs[0], o.Sample)
	if err != nil {
		return nil, err
	}
	in := map[string]*onnxeval.Tensor{g.inputs[0].Name: x}
	ref, err := g.evaluate(ctx, in)
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, fmt.Errorf("%s: %w", o.Model, err))
	}
	before := len(g.nodes)
	if err := g.fold(); err != nil {
		return nil, errkind.Wrap(errkind.Input, fmt.Errorf("%s: %w", o.Model, err))
	}
	o.logf("fold: %d nodes → %d (constants, shape arithmetic, Identity)", before, len(g.nodes))

	res := &ShardResult{OutDir: o.OutDir, Scale: 1}
	powers, acts, err := g.scalePlan()
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, fmt.Errorf("%s: %w", o.Model, err))
	}
	if o.Scale == "auto" {
		res.Scale, res.ScaleLimitedBy = g.chooseScale(powers)
		res.MaxAbs = g.maxAbs[res.ScaleLimitedBy]
	} else {
		res.Scale, _ = strconv.ParseFloat(o.Scale, 64)
	}
	if res.Scale != 1 {
		if err := g.applyScale(res.Scale, acts); err != nil {
			return nil, errkind.Wrap(errkind.Input, fmt.Errorf("%s: %w", o.Model, err))
		}
	}
	if res.ScaleLimitedBy != "" {
		o.logf("scale: s = %g (max |x| %.4g at %q, a tensor carried at s^%g, kept under %g)", res.Scale, res.MaxAbs, res.ScaleLimitedBy, powers[res.ScaleLimitedBy], scaleLimit)
	} else {
		o.logf("scale: s = %g", res.Scale)
	}
	budget := o.SRAMKB * 1024
	pill := o.Barrier == BarrierPill || o.Barrier == BarrierBoth
	scaled := &onnxeval.Tensor{Shape: x.Shape, Data: make([]float64, len(x.Data))}
	for i, v := range x.Data {
		scaled.Data[i] = v * res.Scale
	}
	sin := map[string]*onnxeval.Tensor{g.inputs[0].Name: scaled}
	if _, err := g.evaluate(ctx, sin); err != nil { // shapes of the rescaled graph
		return nil, fmt.Errorf("rknn: the rescaled graph does not evaluate: %w", err)
	}
	tiles, err := g.tile(budget, pill)
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, fmt.Errorf("%s: %w", o.Model, err))
	}
	for _, t := range tiles {
		o.logf("tile: %s: %d bytes in FP16 → %d tiles of ≤ %d rows (%d bytes)", t.Softmax, t.Bytes, t.Tiles, t.Rows, t.MaxBytes)
	}
	out, err := g.evaluate(ctx, sin)
	if err != nil {
		return nil, fmt.Errorf("rknn: the tiled graph does not evaluate: %w", err)
	}
	outName := g.outputs[0].Name
	outScale := math.Pow(res.Scale, -powers[outName])
	got := slices.Clone(out[outName].Data)
	for i := range got {
		got[i] *= outScale
	}
	res.RewriteCosine = onnxeval.Cosine(got, ref[outName].Data)
	if res.RewriteCosine < 0.99999 {
		return nil, fmt.Errorf("rknn: internal error: the rewritten graph's output differs from the original's in float64 (cosine %.6f); please report it with the model", res.RewriteCosine)
	}

	m := &rknnchain.Manifest{Schema: rknnchain.ManifestSchema, Source: filepath.Base(o.Model), InputScale: res.Scale, OutputScale: outScale,
		Cores: o.Cores, Barrier: o.Barrier, Sample: sampleDesc, Tiles: tiles,
		Budget: rknnchain.Budget{SRAMKB: o.SRAMKB, Bytes: budget},
		Build:  rknnchain.BuildConfig{TargetPlatform: "rk3588", FloatDType: "float16", DisableRules: []string{}}}
	if o.Barrier == BarrierRules || o.Barrier == BarrierBoth {
		zero := 0
		m.Build.OptimizationLevel = &zero
		m.Build.DisableRules = slices.Clone(fusionRules)
	}
	info := func(name string) rknnchain.TensorInfo {
		t := rknnchain.TensorInfo{Name: name, Type: "FLOAT", Shape: g.shapes[name], Scale: math.Pow(res.Scale, powers[name])}
		if g.isInt[name] {
			t.Type, t.Scale = "INT64", 1
		}
		return t
	}
	for _, v := range g.inputs {
		m.Inputs = append(m.Inputs, info(v.Name))
	}
	for _, v := range g.outputs {
		m.Outputs = append(m.Outputs, info(v.Name))
	}
	parts := g.cut()
	models := make([]*onnx.Model, len(parts))
	for i, p := range parts {
		name := fmt.Sprintf("shard_%02d", i)
		sm, sh := g.shardModel(name, p)
		sh.Core = i % o.Cores
		for _, in := range p.inputs {
			sh.Inputs = append(sh.Inputs, info(in))
		}
		for _, out := range p.outputs {
			sh.Outputs = append(sh.Outputs, info(out))
		}
		if sh.MaxSoftmaxBytes > budget {
			return nil, fmt.Errorf("rknn: internal error: shard %s has a Softmax input of %d bytes over the %d-byte budget", name, sh.MaxSoftmaxBytes, budget)
		}
		m.Budget.MaxSoftmaxBytes = max(m.Budget.MaxSoftmaxBytes, sh.MaxSoftmaxBytes)
		m.Shards = append(m.Shards, sh)
		models[i] = sm
	}
	if err := writeOut(o.OutDir, m, models); err != nil {
		return nil, err
	}
	o.logf("shards: %d over %d cores, Softmax inputs ≤ %d bytes (budget %d)", len(m.Shards), o.Cores, m.Budget.MaxSoftmaxBytes, budget)
	res.Manifest = m
	return res, nil
}

// shardModel makes part p a standalone model named name.
func (g *graph) shardModel(name string, p part) (*onnx.Model, rknnchain.ShardEntry) {
	gr := &onnx.Graph{Name: name, Node: p.nodes}
	sh := rknnchain.ShardEntry{File: name + ".onnx", Ops: len(p.nodes), Ends: p.ends}
	seen := map[string]bool{}
	for _, n := range p.nodes {
		for _, in := range n.Input {
			if t := g.inits[in]; t != nil && !seen[in] {
				seen[in] = true
				gr.Initializer = append(gr.Initializer, t)
			}
		}
		if n.OpType == "Softmax" {
			sh.MaxSoftmaxBytes = max(sh.MaxSoftmaxBytes, 2*numel(g.shapes[n.Input[0]]))
		}
	}
	vi := func(t string) *onnx.ValueInfo {
		et := onnx.Float
		if g.isInt[t] {
			et = onnx.Int64
		}
		return onnx.TensorValue(t, et, int64s(g.shapes[t]))
	}
	for _, in := range p.inputs {
		gr.Input = append(gr.Input, vi(in))
	}
	for _, out := range p.outputs {
		gr.Output = append(gr.Output, vi(out))
	}
	return &onnx.Model{IRVersion: g.src.IRVersion, OpsetImport: g.src.OpsetImport, ProducerName: "edgectl rknn shard", Graph: gr}, sh
}

// writeOut writes the shards and the manifest into a temporary sibling of
// dir and renames it into place: no partial OUT.
func writeOut(dir string, m *rknnchain.Manifest, models []*onnx.Model) error {
	d, err := atomicfile.CreateDir(dir)
	if err != nil {
		return errkind.Wrap(errkind.Input, err)
	}
	defer d.Abort()
	for i, sm := range models {
		if err := onnx.WriteFile(filepath.Join(d.Path, m.Shards[i].File), sm, onnx.WriteOptions{}); err != nil {
			return err
		}
	}
	if err := rknnchain.Write(d.Path, m); err != nil {
		return err
	}
	return d.Commit()
}
