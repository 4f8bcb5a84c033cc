package testmodel

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/format/rknnchain"
)

// ChainSpec describes a built RK3588 shard chain for the rknn lane's
// tests: Cores[i] is shard i's core; every tensor has Shape; shard i reads
// the previous shard's output (the first reads the model input
// "patch_embeds") and the last writes "last_hidden_state".
type ChainSpec struct {
	Cores       []int
	Shape       []int   // default [1, 4, 3]
	InputScale  float64 // default 0.125
	OutputScale float64 // default 2
	// RKNN is shard i's .rknn bytes (default: a placeholder line); the
	// Python stub of rknnlite reads its behaviour from them.
	RKNN func(i int) []byte
}

// WriteChain writes dir/manifest.json through rknnchain.Write (so it is
// what Read accepts) and one .rknn file per shard with its sha256.
func WriteChain(dir string, s ChainSpec) error {
	if s.Shape == nil {
		s.Shape = []int{1, 4, 3}
	}
	if s.InputScale == 0 {
		s.InputScale = 0.125
	}
	if s.OutputScale == 0 {
		s.OutputScale = 2
	}
	if s.RKNN == nil {
		s.RKNN = func(i int) []byte { return fmt.Appendf(nil, "fake rknn shard %d\n", i) }
	}
	t := func(name string, scale float64) rknnchain.TensorInfo {
		return rknnchain.TensorInfo{Name: name, Type: "FLOAT", Shape: s.Shape, Scale: scale}
	}
	maxCore := 0
	for _, c := range s.Cores {
		maxCore = max(maxCore, c)
	}
	m := &rknnchain.Manifest{Schema: rknnchain.ManifestSchema, Source: "model.onnx", InputScale: s.InputScale, OutputScale: s.OutputScale,
		Inputs: []rknnchain.TensorInfo{t("patch_embeds", 1)}, Outputs: []rknnchain.TensorInfo{t("last_hidden_state", 1)},
		Cores: maxCore + 1, Barrier: "pill", Sample: "test", Build: rknnchain.BuildConfig{TargetPlatform: "rk3588", FloatDType: "float16", DisableRules: []string{}}}
	prev := "patch_embeds"
	for i, core := range s.Cores {
		out := fmt.Sprintf("h%d", i)
		if i == len(s.Cores)-1 {
			out = "last_hidden_state"
		}
		b := s.RKNN(i)
		name := fmt.Sprintf("shard_%02d.rknn", i)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		m.Shards = append(m.Shards, rknnchain.ShardEntry{File: fmt.Sprintf("shard_%02d.onnx", i), Core: core,
			Inputs: []rknnchain.TensorInfo{t(prev, 1)}, Outputs: []rknnchain.TensorInfo{t(out, 1)}, Ops: 1,
			RKNN: name, RKNNSHA256: hex.EncodeToString(sum[:]), RKNNToolkit: "2.3.2 (test)"})
		prev = out
	}
	return rknnchain.Write(dir, m)
}
