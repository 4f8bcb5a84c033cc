package rknnrt

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/edgectl/edgectl/engine"
)

// InputShape is the tensor the chain takes (the manifest's model input).
func (m *Model) InputShape() []int { return slices.Clone(m.chain.input.Shape) }

// Encode runs the chain once: the input ×input_scale on the host, every
// shard in manifest order on its core in the helper, the output
// ×output_scale on the host. One request at a time; a request that
// outlives RunTimeout (or ctx's deadline) kills the helper, and the model
// reports itself dead so serve starts a new one.
func (m *Model) Encode(ctx context.Context, req engine.EncodeRequest) (engine.EncodeResult, error) {
	var res engine.EncodeResult
	c := m.chain
	shape := req.Shape
	if shape == nil {
		shape = c.input.Shape
	}
	if !slices.Equal(shape, c.input.Shape) {
		return res, fmt.Errorf("%w: input shape %v: %s takes %s %v (manifest.json inputs[0]; the shards are compiled for that shape)",
			engine.ErrInvalidRequest, shape, m.info.Name, c.input.Name, c.input.Shape)
	}
	if len(req.Input) != c.inElems {
		return res, fmt.Errorf("%w: input holds %d values, shape %v needs %d", engine.ErrInvalidRequest, len(req.Input), shape, c.inElems)
	}
	payload := make([]byte, 0, 4*len(req.Input))
	scaled := make([]float32, 256)
	for i := 0; i < len(req.Input); i += len(scaled) {
		part := req.Input[i:min(i+len(scaled), len(req.Input))]
		for j, x := range part {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return res, fmt.Errorf("%w: input[%d] is %v: send finite values", engine.ErrInvalidRequest, i+j, x)
			}
			scaled[j] = float32(float64(x) * c.inputScale)
		}
		payload = PutFloats(payload, scaled[:len(part)])
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.Alive(); err != nil {
		return res, err
	}
	start := time.Now()
	m.nextID++
	run := Header{Op: OpRun, ID: m.nextID, Tensors: []TensorSpec{{Name: c.input.Name, Shape: c.input.Shape}}}
	h, out, err := m.exchange(ctx, m.opts.RunTimeout, run, payload, int64(c.outElems)*4)
	if err != nil {
		return res, err
	}
	if err := m.checkResult(h, out); err != nil {
		m.kill(err)
		return res, err
	}
	res.Output = Floats(out)
	if c.outScale != 1 {
		for i, x := range res.Output {
			res.Output[i] = float32(float64(x) * c.outScale)
		}
	}
	res.Shape = slices.Clone(c.output.Shape)
	res.Duration = time.Since(start)
	for _, t := range h.Timings {
		res.Stages = append(res.Stages, engine.EncodeStage{Name: c.files[t.Index], Core: t.Core,
			Duration: time.Duration(t.MS * float64(time.Millisecond))})
	}
	return res, nil
}

// checkResult holds a result frame to the chain: the model output under
// its name and shape, and one timing per shard in manifest order on the
// shard's core (what the lane promises its callers).
func (m *Model) checkResult(h Header, out []byte) error {
	c := m.chain
	if len(h.Tensors) != 1 || h.Tensors[0].Name != c.output.Name || Elements(h.Tensors[0].Shape) != c.outElems ||
		int64(len(out)) != int64(c.outElems)*4 {
		return fmt.Errorf("rknn helper answered with tensors %v (%d bytes), want %s %v: helper and edgectl disagree on the protocol (restarting it)",
			h.Tensors, len(out), c.output.Name, c.output.Shape)
	}
	if len(h.Timings) != len(c.shards) {
		return fmt.Errorf("rknn helper reported %d shard timings for a chain of %d shards (restarting it)", len(h.Timings), len(c.shards))
	}
	for i, t := range h.Timings {
		if t.Index != i || t.Core != c.shards[i].Core {
			return fmt.Errorf("rknn helper ran shard %d on core %d as step %d; the manifest says shard %d on core %d (restarting it)",
				t.Index, t.Core, i, i, c.shards[i].Core)
		}
	}
	return nil
}
