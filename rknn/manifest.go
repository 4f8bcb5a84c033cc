package rknn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/edgectl/edgectl/internal/mmapfile"
)

// ManifestFile is the name of the chain's description in OUT.
const ManifestFile = "manifest.json"

// ManifestSchema is the manifest's version.
const ManifestSchema = 1

// Manifest says how to run the shards: multiply the model input by
// InputScale on the host, run the shards in order (each on its core,
// feeding each its inputs by name from the model input and earlier shards'
// outputs), multiply the model output by OutputScale.
type Manifest struct {
	Schema      int          `json:"schema"`
	Source      string       `json:"source"` // the model's file name
	InputScale  float64      `json:"input_scale"`
	OutputScale float64      `json:"output_scale"`
	Inputs      []TensorInfo `json:"inputs"`
	Outputs     []TensorInfo `json:"outputs"`
	Cores       int          `json:"cores"`
	Barrier     string       `json:"barrier"`
	Budget      Budget       `json:"tile_budget"`
	Sample      string       `json:"sample"` // what calibrated the scale
	Build       BuildConfig  `json:"build"`
	Shards      []ShardEntry `json:"shards"`
	Tiles       []TileResult `json:"tiles,omitempty"`
}

// TensorInfo is a tensor crossing a shard boundary, with the power of s
// it is carried at (the host divides a model output by Scale).
type TensorInfo struct {
	Name  string  `json:"name"`
	Type  string  `json:"type"` // FLOAT or INT64
	Shape []int   `json:"shape"`
	Scale float64 `json:"scale"`
}

// Budget is the per-vector-operation scratchpad the tiling targets.
type Budget struct {
	SRAMKB          int `json:"sram_kb"`
	Bytes           int `json:"bytes"`
	MaxSoftmaxBytes int `json:"max_softmax_bytes"` // largest Softmax input in FP16 after tiling
}

// BuildConfig is what `rknn.config(...)` gets when the shards are built
// with rknn-toolkit2.
type BuildConfig struct {
	TargetPlatform    string   `json:"target_platform"`
	FloatDType        string   `json:"float_dtype"`
	OptimizationLevel *int     `json:"optimization_level,omitempty"`
	DisableRules      []string `json:"disable_rules"`
}

// ShardEntry is one ONNX file of the chain.
type ShardEntry struct {
	File            string       `json:"file"`
	Core            int          `json:"core"`
	Ends            string       `json:"ends_at,omitempty"` // the residual Add that closes it
	Inputs          []TensorInfo `json:"inputs"`
	Outputs         []TensorInfo `json:"outputs"`
	Ops             int          `json:"ops"`
	MaxSoftmaxBytes int          `json:"max_softmax_bytes"`
}

// fusionRules are the rknn-toolkit2 rewrites that would merge the tiles
// (and the attention pattern) back together, as the SHARD build script
// disables them (../shared/docs/rknn.md §2).
var fusionRules = []string{
	"fuse_matmul_softmax_matmul_to_sdpa", "fuse_transpose_reshape", "fuse_channel_shuffle_split_concat_to_gather",
	"squeeze_nd_add", "squeeze_to_4d_add", "eliminate_add_redundancy_const_dim",
	"fuse_exmatmul_mul", "convert_softmax_to_exsoftmax13",
}

// maxManifest caps what ReadManifest reads.
const maxManifest = 16 << 20

// ReadManifest reads and checks OUT/manifest.json: schema, shard files
// that are plain names inside OUT, cores, and that every shard's inputs
// are the model's inputs or earlier shards' outputs.
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	f, err := mmapfile.Open(p, "an rknn shard manifest")
	if err != nil {
		return nil, fmt.Errorf("%w (is %s the -o directory of edgectl rknn shard?)", err, dir)
	}
	defer f.Close()
	if f.Size() > maxManifest {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for a manifest: it is not one edgectl wrote", p, f.Size(), maxManifest)
	}
	b, err := f.Slice(0, f.Size())
	if err != nil {
		return nil, err
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %v (write it again with edgectl rknn shard)", p, err)
	}
	if m.Schema != ManifestSchema {
		return nil, fmt.Errorf("%s: schema %d, this edgectl reads %d (shard the model again)", p, m.Schema, ManifestSchema)
	}
	if len(m.Shards) == 0 {
		return nil, fmt.Errorf("%s: no shards", p)
	}
	have := map[string]bool{}
	for _, in := range m.Inputs {
		have[in.Name] = true
	}
	for i, s := range m.Shards {
		if filepath.Base(s.File) != s.File || !filepath.IsLocal(s.File) {
			return nil, fmt.Errorf("%s: shards[%d].file %q must be a file name inside %s", p, i, s.File, dir)
		}
		if s.Core < 0 || m.Cores > 0 && s.Core >= m.Cores {
			return nil, fmt.Errorf("%s: shards[%d].core %d is not one of the %d cores", p, i, s.Core, m.Cores)
		}
		for _, in := range s.Inputs {
			if !have[in.Name] {
				return nil, fmt.Errorf("%s: shards[%d] (%s) reads %q, which neither the model input nor an earlier shard provides", p, i, s.File, in.Name)
			}
		}
		for _, o := range s.Outputs {
			have[o.Name] = true
		}
	}
	for _, o := range m.Outputs {
		if !have[o.Name] {
			return nil, fmt.Errorf("%s: the model output %q is produced by no shard", p, o.Name)
		}
	}
	return &m, nil
}

// ShardOps are the operators shards contain (after folding, scaling and
// tiling a torch.onnx ViT encoder): all in rknn-toolkit2's ONNX operator
// list. docs/rknn.md lists them.
var ShardOps = []string{"Add", "Concat", "Div", "Erf", "MatMul", "Mul", "Pow", "ReduceMean", "Reshape", "Sigmoid", "Slice",
	"Softmax", "Sqrt", "Sub", "Transpose"}
