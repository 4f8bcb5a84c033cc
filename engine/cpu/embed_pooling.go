package cpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/hfconfig"
)

// poolSpec is how a model's token vectors become one embedding, as its own
// files say: sentence-transformers' modules.json with its Pooling module's
// config (1_Pooling/config.json) and a Normalize module, or a GGUF's
// <arch>.pooling_type. A model that says nothing is mean-pooled and left
// unnormalised (the APIs normalise on top).
type poolSpec struct {
	rule      string // engine.PoolMean, PoolCLS or PoolLast
	normalize bool
	// err: the files name a pooling the engine does not implement (max,
	// weighted mean, a reranker's rank); Embed returns it.
	err error
}

// maxPoolingFile bounds modules.json and the pooling config (a few
// hundred bytes in every published model).
const maxPoolingFile = 1 << 16

// stModule is one entry of sentence-transformers' modules.json.
type stModule struct {
	Path string `json:"path"`
	Type string `json:"type"`
}

// stPooling is sentence-transformers' Pooling config (both spellings:
// the pooling_mode_* booleans, and the newer single pooling_mode).
type stPooling struct {
	Mode      string `json:"pooling_mode"`
	CLS       bool   `json:"pooling_mode_cls_token"`
	Mean      bool   `json:"pooling_mode_mean_tokens"`
	Max       bool   `json:"pooling_mode_max_tokens"`
	MeanSqrt  bool   `json:"pooling_mode_mean_sqrt_len_tokens"`
	Weighted  bool   `json:"pooling_mode_weightedmean_tokens"`
	LastToken bool   `json:"pooling_mode_lasttoken"`
}

// readJSONFile decodes a small JSON file a model directory holds.
func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) > maxPoolingFile {
		return fmt.Errorf("%s: %d bytes, more than the %d a pooling file may hold", path, len(b), maxPoolingFile)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %v (fix or remove the file)", path, err)
	}
	return nil
}

// dirPooling reads a checkpoint directory's sentence-transformers files;
// def is the rule when there are none.
func dirPooling(dir, def string) poolSpec {
	spec := poolSpec{rule: def}
	var mods []stModule
	err := readJSONFile(filepath.Join(dir, "modules.json"), &mods)
	if errors.Is(err, os.ErrNotExist) {
		return spec
	}
	if err != nil {
		spec.err = err
		return spec
	}
	for _, mod := range mods {
		switch {
		case strings.HasSuffix(mod.Type, ".Pooling"):
			if strings.Contains(mod.Path, "..") || filepath.IsAbs(mod.Path) {
				spec.err = fmt.Errorf("%s: module path %q leaves the model directory", filepath.Join(dir, "modules.json"), mod.Path)
				return spec
			}
			var p stPooling
			if err := readJSONFile(filepath.Join(dir, mod.Path, "config.json"), &p); err != nil {
				spec.err = err
				return spec
			}
			spec.rule, spec.err = p.rule(filepath.Join(dir, mod.Path, "config.json"))
		case strings.HasSuffix(mod.Type, ".Normalize"):
			spec.normalize = true
		}
	}
	return spec
}

// rule is the one pooling mode the config turns on.
func (p stPooling) rule(path string) (string, error) {
	switch strings.ToLower(p.Mode) {
	case "mean":
		return engine.PoolMean, nil
	case "cls":
		return engine.PoolCLS, nil
	case "lasttoken":
		return engine.PoolLast, nil
	case "":
	default:
		return "", fmt.Errorf("%s: pooling_mode %q is not implemented by the CPU engine (it pools mean, cls and lasttoken)", path, p.Mode)
	}
	var on []string
	for _, m := range []struct {
		set  bool
		name string
	}{{p.CLS, "cls_token"}, {p.Mean, "mean_tokens"}, {p.Max, "max_tokens"}, {p.MeanSqrt, "mean_sqrt_len_tokens"},
		{p.Weighted, "weightedmean_tokens"}, {p.LastToken, "lasttoken"}} {
		if m.set {
			on = append(on, m.name)
		}
	}
	switch {
	case len(on) == 1 && p.Mean:
		return engine.PoolMean, nil
	case len(on) == 1 && p.CLS:
		return engine.PoolCLS, nil
	case len(on) == 1 && p.LastToken:
		return engine.PoolLast, nil
	case len(on) == 0:
		return "", fmt.Errorf("%s: no pooling_mode_* is true; set pooling_mode_mean_tokens, pooling_mode_cls_token or pooling_mode_lasttoken", path)
	}
	return "", fmt.Errorf("%s: pooling pooling_mode_%s is not implemented by the CPU engine (it pools with exactly one of mean_tokens, cls_token, lasttoken)",
		path, strings.Join(on, " + pooling_mode_"))
}

// ggufPooling reads <arch>.pooling_type (llama.cpp's enum: 0 none, 1 mean,
// 2 cls, 3 last, 4 rank); def when the key is absent or none. GGUF
// embedding models are normalised by the API, as llama.cpp's server does.
func ggufPooling(g *gguf.File, def string) poolSpec {
	spec := poolSpec{rule: def}
	v, err := g.Int(g.Architecture() + ".pooling_type")
	if err != nil {
		return spec
	}
	switch v {
	case 0:
	case 1:
		spec.rule = engine.PoolMean
	case 2:
		spec.rule = engine.PoolCLS
	case 3:
		spec.rule = engine.PoolLast
	default:
		spec.err = fmt.Errorf("%s: %s.pooling_type %d (rank: a reranker) is not an embedding pooling; the CPU engine pools mean (1), cls (2) and last (3)",
			g.Path, g.Architecture(), v)
	}
	return spec
}

// EmbeddingSpec is what a model's files say about embedding with it,
// read without loading weights (inspect, Probe).
type EmbeddingSpec struct {
	Embeds    bool   `json:"embeds"`
	EmbedOnly bool   `json:"embed_only"` // an encoder: it cannot generate
	Pooling   string `json:"pooling"`    // engine.PoolMean, PoolCLS, PoolLast
	Normalize bool   `json:"normalize"`  // its files L2-normalise (sentence-transformers' Normalize)
	// Problem is why Embed would refuse it (a pooling the engine lacks).
	Problem string `json:"problem,omitempty"`
}

// DescribeEmbedding reads the embedding rules of the model at path (a
// checkpoint directory or a .gguf; other files get the decoder default).
func DescribeEmbedding(path string) (EmbeddingSpec, error) {
	spec := poolSpec{rule: engine.PoolMean}
	out := EmbeddingSpec{Embeds: true}
	switch fi, err := os.Stat(path); {
	case err != nil:
		return out, err
	case fi.IsDir():
		if c, err := hfconfig.Load(filepath.Join(path, "config.json")); err == nil {
			out.EmbedOnly = isEncoderConfig(c.Text())
		}
		spec = dirPooling(path, engine.PoolMean)
	case strings.HasSuffix(path, ".gguf"):
		g, err := gguf.Open(path)
		if err != nil {
			return out, err
		}
		defer g.Close()
		out.EmbedOnly = g.Architecture() == "bert"
		spec = ggufPooling(g, engine.PoolMean)
	}
	out.Pooling, out.Normalize = spec.rule, spec.normalize
	if spec.err != nil {
		out.Problem = spec.err.Error()
	}
	return out, nil
}
