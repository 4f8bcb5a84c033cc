// Package rknnchain is the one reader/writer of an RK3588 shard chain's
// OUT/manifest.json: what `edgectl rknn shard` writes, what `rknn build`
// adds the compiled .rknn files to, and what the board's runtime lane reads
// to run the shards in order on their cores. Both halves import it; the
// passes that make a chain stay in the pipeline package rknn.
package rknnchain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/edgectl/edgectl/internal/atomicfile"
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

// ShardEntry is one ONNX file of the chain and, once `rknn build` ran,
// the .rknn file compiled from it (all shards have one, or none does).
type ShardEntry struct {
	File            string       `json:"file"`
	Core            int          `json:"core"`
	Ends            string       `json:"ends_at,omitempty"` // the residual Add that closes it
	Inputs          []TensorInfo `json:"inputs"`
	Outputs         []TensorInfo `json:"outputs"`
	Ops             int          `json:"ops"`
	MaxSoftmaxBytes int          `json:"max_softmax_bytes"`

	RKNN        string `json:"rknn,omitempty"`         // the compiled file, beside the manifest
	RKNNSHA256  string `json:"rknn_sha256,omitempty"`  // its sha256, hex
	RKNNToolkit string `json:"rknn_toolkit,omitempty"` // the rknn-toolkit2 version that compiled it
}

// TileResult is what tiling did to one Softmax.
type TileResult struct {
	Softmax  string `json:"softmax"`
	Bytes    int    `json:"bytes"`      // its input in FP16, untiled
	Rows     int    `json:"rows"`       // query rows per tile
	Tiles    int    `json:"tiles"`      // heads × row blocks
	MaxBytes int    `json:"tile_bytes"` // largest tile's Softmax input in FP16
}

// Built reports whether the shards have compiled .rknn files (Read checked
// that all of them do or none does).
func (m *Manifest) Built() bool { return len(m.Shards) > 0 && m.Shards[0].RKNN != "" }

// maxManifest caps what Read reads.
const maxManifest = 16 << 20

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Read reads and checks OUT/manifest.json: schema, shard files that are
// plain names inside OUT, cores, that every shard's inputs are the model's
// inputs or earlier shards' outputs, and the .rknn entries (all or none,
// names inside OUT, sha256 in hex).
func Read(dir string) (*Manifest, error) {
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
	if err := m.validate(p, dir); err != nil {
		return nil, err
	}
	return &m, nil
}

func (m *Manifest) validate(p, dir string) error {
	if m.Schema != ManifestSchema {
		return fmt.Errorf("%s: schema %d, this edgectl reads %d (shard the model again)", p, m.Schema, ManifestSchema)
	}
	if len(m.Shards) == 0 {
		return fmt.Errorf("%s: no shards", p)
	}
	local := func(name string) bool { return name != "" && filepath.Base(name) == name && filepath.IsLocal(name) }
	have := map[string]bool{}
	for _, in := range m.Inputs {
		have[in.Name] = true
	}
	built := m.Shards[0].RKNN != ""
	for i, s := range m.Shards {
		if !local(s.File) {
			return fmt.Errorf("%s: shards[%d].file %q must be a file name inside %s", p, i, s.File, dir)
		}
		if s.Core < 0 || m.Cores > 0 && s.Core >= m.Cores {
			return fmt.Errorf("%s: shards[%d].core %d is not one of the %d cores", p, i, s.Core, m.Cores)
		}
		if (s.RKNN != "") != built {
			return fmt.Errorf("%s: shards[%d] (%s) and shards[0] disagree on having an rknn file: a build writes all of them or none (run edgectl rknn build %s again)",
				p, i, s.File, dir)
		}
		if built {
			if !local(s.RKNN) || !strings.HasSuffix(s.RKNN, ".rknn") {
				return fmt.Errorf("%s: shards[%d].rknn %q must be a .rknn file name inside %s", p, i, s.RKNN, dir)
			}
			if !sha256Hex.MatchString(s.RKNNSHA256) {
				return fmt.Errorf("%s: shards[%d].rknn_sha256 %q is not a sha256 in lowercase hex (run edgectl rknn build %s again)", p, i, s.RKNNSHA256, dir)
			}
		}
		for _, in := range s.Inputs {
			if !have[in.Name] {
				return fmt.Errorf("%s: shards[%d] (%s) reads %q, which neither the model input nor an earlier shard provides", p, i, s.File, in.Name)
			}
		}
		for _, o := range s.Outputs {
			have[o.Name] = true
		}
	}
	for _, o := range m.Outputs {
		if !have[o.Name] {
			return fmt.Errorf("%s: the model output %q is produced by no shard", p, o.Name)
		}
	}
	return nil
}

// Write checks m as Read would and writes it to dir/manifest.json
// atomically (temp file, fsync, rename): a reader sees the old manifest or
// the new one, never a mix.
func Write(dir string, m *Manifest) error {
	p := filepath.Join(dir, ManifestFile)
	if err := m.validate(p, dir); err != nil {
		return fmt.Errorf("edgectl bug: writing an invalid manifest: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(p, append(b, '\n'), 0o644)
}
