package rknn

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/mmapfile"
	"github.com/edgectl/edgectl/rknn/onnxeval"
)

// sampleSeed seeds the default sample input, so shard and verify see the
// same one.
const sampleSeed = 1

// inputShape is a graph input's static shape; symbolic or unknown
// dimensions (a dynamic batch) are taken as 1.
func inputShape(v *onnx.ValueInfo) ([]int, error) {
	if v.Type == nil || v.Type.Tensor == nil || v.Type.Tensor.Shape == nil {
		return nil, errkind.Errorf(errkind.Input, "graph input %q has no tensor shape: export the model with a fixed input shape", v.Name)
	}
	if et := v.Type.Tensor.ElemType; et != onnx.Float {
		return nil, errkind.Errorf(errkind.Input, "graph input %q is %v: the shard chain takes a FLOAT input (patch embeddings)", v.Name, et)
	}
	var s []int
	for _, d := range v.Type.Tensor.Shape.Dim {
		if d.HasValue && d.Value > 0 {
			s = append(s, int(d.Value))
		} else {
			s = append(s, 1)
		}
	}
	if n := numel(s); n <= 0 || n > 1<<28 {
		return nil, errkind.Errorf(errkind.Input, "graph input %q has shape %v (%d elements): not an encoder input", v.Name, s, n)
	}
	return s, nil
}

// sampleInput is the calibration and verification input: path's raw
// little-endian float32 values, or standard normal values (seeded).
func sampleInput(v *onnx.ValueInfo, path string) (*onnxeval.Tensor, string, error) {
	shape, err := inputShape(v)
	if err != nil {
		return nil, "", err
	}
	t := onnxeval.New(shape, nil)
	if path == "" {
		rng := rand.New(rand.NewPCG(sampleSeed, 0))
		for i := range t.Data {
			t.Data[i] = rng.NormFloat64()
		}
		return t, fmt.Sprintf("standard normal, seed %d", sampleSeed), nil
	}
	f, err := mmapfile.Open(path, "a sample input (raw float32)")
	if err != nil {
		return nil, "", errkind.Wrap(errkind.Input, err)
	}
	defer f.Close()
	if want := int64(4 * len(t.Data)); f.Size() != want {
		return nil, "", errkind.Errorf(errkind.Input, "%s is %d bytes; input %q %v needs %d little-endian float32 values (%d bytes)", path, f.Size(), v.Name, shape, len(t.Data), want)
	}
	b := make([]byte, 4*len(t.Data))
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, "", err
	}
	for i := range t.Data {
		x := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, "", errkind.Errorf(errkind.Input, "%s: value %d (byte %d) is %v: a sample input must be finite", path, i, 4*i, x)
		}
		t.Data[i] = x
	}
	return t, filepath.Base(path), nil
}
