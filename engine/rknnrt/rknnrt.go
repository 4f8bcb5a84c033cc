// Package rknnrt is the rknn lane: it runs a sharded encoder (the
// directory `edgectl rknn shard` and `rknn build` write: manifest.json and
// one .rknn file per shard) on the RK3588's NPU. A helper process
// (helper/edgectl_rknn_helper.py, through rknn-toolkit-lite2) loads every
// shard pinned to its core once, then runs the chain per request; this
// package starts it, speaks its framed protocol (protocol.go), applies the
// manifest's host-side scaling, times each request out, and restarts the
// helper when it dies or hangs — as engine/axcl does for the Axera
// runtime. A loaded Model is an engine.Encoder; it does not generate text.
package rknnrt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/rknnchain"
	"github.com/edgectl/edgectl/internal/envconfig"
)

// Options configure how the helper is started, timed and stopped.
type Options struct {
	// Command runs the helper; nil: Python and the embedded helper script
	// (written to CacheDir). Tests give a fake speaking the protocol.
	Command []string
	// Python runs the embedded helper (default EDGECTL_RKNN_PYTHON, else
	// python3): one whose rknnlite package (rknn-toolkit-lite2) imports.
	Python string
	// Env is added to the helper's environment.
	Env []string
	// CacheDir receives the helper script (default: the user cache dir's
	// edgectl/rknnrt).
	CacheDir string
	// StartTimeout bounds loading every shard (default 2m).
	StartTimeout time.Duration
	// RunTimeout bounds one request (default 60s): past it the helper is
	// killed, the request fails and the next one starts a new helper.
	RunTimeout time.Duration
	// StopTimeout bounds each shutdown step: quit, SIGTERM (default 5s).
	StopTimeout time.Duration
	// Logf receives the helper's stderr lines and restarts (default: the
	// standard logger).
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.Python == "" {
		o.Python = envconfig.RKNNPython.Get()
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 60 * time.Second
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 5 * time.Second
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return o
}

// Format is what Probe and ModelInfo call a built shard chain.
const Format = "rknn"

// Engine starts helpers for shard chains.
type Engine struct{ opts Options }

// New returns the rknn lane.
func New(opts Options) *Engine { return &Engine{opts: opts.withDefaults()} }

// Name is "rknn".
func (e *Engine) Name() string { return "rknn" }

// Probe recognizes a built chain: a manifest.json that rknnchain reads,
// whose shards all have their .rknn file present. Its size is the .rknn
// files' (what the NPU's memory holds, roughly).
func (e *Engine) Probe(path string) (engine.Found, bool) {
	if fi, err := os.Stat(filepath.Join(path, rknnchain.ManifestFile)); err != nil || !fi.Mode().IsRegular() {
		return engine.Found{}, false
	}
	m, err := rknnchain.Read(path)
	if err != nil || !m.Built() {
		return engine.Found{}, false
	}
	var size int64
	for _, s := range m.Shards {
		fi, err := os.Stat(filepath.Join(path, s.RKNN))
		if err != nil || !fi.Mode().IsRegular() {
			return engine.Found{}, false
		}
		size += fi.Size()
	}
	return engine.Found{Format: Format, Size: size, Arch: "encoder"}, true
}

// chain is what a request needs from the manifest.
type chain struct {
	input, output        rknnchain.TensorInfo
	inputScale, outScale float64
	shards               []ShardSpec
	files                []string // each shard's .rknn name, for telemetry
	inElems, outElems    int
}

// readChain reads dir's manifest and checks what the lane runs: a built
// chain of one FLOAT input and one FLOAT output, .rknn files matching
// their recorded sha256.
func readChain(dir string) (*chain, error) {
	m, err := rknnchain.Read(dir)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, rknnchain.ManifestFile)
	if !m.Built() {
		return nil, fmt.Errorf("%s: the shards have no .rknn files yet: compile them with `edgectl rknn build %s` (on a workstation) and copy the directory to the board", p, dir)
	}
	if len(m.Inputs) != 1 || len(m.Outputs) != 1 {
		return nil, fmt.Errorf("%s: %d inputs and %d outputs; the rknn lane runs encoders of one input and one output", p, len(m.Inputs), len(m.Outputs))
	}
	c := &chain{input: m.Inputs[0], output: m.Outputs[0], inputScale: m.InputScale, outScale: m.OutputScale}
	if c.inputScale == 0 {
		c.inputScale = 1
	}
	if c.outScale == 0 {
		c.outScale = 1
	}
	for _, t := range []rknnchain.TensorInfo{c.input, c.output} {
		if t.Type != "" && t.Type != "FLOAT" {
			return nil, fmt.Errorf("%s: tensor %s is %s; the rknn lane takes and returns FLOAT tensors", p, t.Name, t.Type)
		}
	}
	if c.inElems, c.outElems = Elements(c.input.Shape), Elements(c.output.Shape); c.inElems <= 0 || c.outElems <= 0 {
		return nil, fmt.Errorf("%s: input %s %v or output %s %v has no fixed shape (shard the model with every dimension fixed)", p, c.input.Name, c.input.Shape, c.output.Name, c.output.Shape)
	}
	for i, s := range m.Shards {
		path := filepath.Join(dir, s.RKNN)
		if err := checkSHA256(path, s.RKNNSHA256); err != nil {
			return nil, fmt.Errorf("%s: shards[%d]: %w", p, i, err)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		spec := ShardSpec{Index: i, Path: abs, Core: s.Core}
		for _, t := range s.Inputs {
			spec.Inputs = append(spec.Inputs, TensorSpec{Name: t.Name, Shape: slices.Clone(t.Shape)})
		}
		for _, t := range s.Outputs {
			spec.Outputs = append(spec.Outputs, TensorSpec{Name: t.Name, Shape: slices.Clone(t.Shape)})
		}
		c.shards = append(c.shards, spec)
		c.files = append(c.files, s.RKNN)
	}
	return c, nil
}

// checkSHA256 compares a compiled shard with what `rknn build` recorded:
// a file copied short, or swapped for another build, fails here instead
// of computing something else on the NPU.
func checkSHA256(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w (copy the whole directory `edgectl rknn build` wrote)", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s has sha256 %s, the manifest records %s: the file changed since `edgectl rknn build` (copy it again, or build again)", path, got, want)
	}
	return nil
}

// Load reads the chain at path, starts the helper and waits until every
// shard is loaded on its core.
func (e *Engine) Load(ctx context.Context, path string, _ engine.LoadOptions) (engine.Model, error) {
	if fi, err := os.Stat(filepath.Join(path, rknnchain.ManifestFile)); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: no %s: not an rknn shard chain: %w", path, rknnchain.ManifestFile, engine.ErrUnsupported)
	}
	c, err := readChain(path)
	if err != nil {
		return nil, err
	}
	args := e.opts.Command
	if len(args) == 0 {
		script, err := writeHelper(e.opts.CacheDir)
		if err != nil {
			return nil, err
		}
		args = []string{e.opts.Python, script}
	}
	var size int64
	for _, s := range c.shards {
		if fi, err := os.Stat(s.Path); err == nil {
			size += fi.Size()
		}
	}
	m := &Model{dir: path, opts: e.opts, args: args, chain: c,
		info: engine.ModelInfo{Name: filepath.Base(path), Architecture: "encoder", Format: Format, SizeBytes: size}}
	if err := m.start(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// ErrExited reports that the helper is gone; serve loads the model again.
var ErrExited = errors.New("rknn helper exited")

// ErrTimeout is a request the helper did not answer in time; it was killed.
var ErrTimeout = fmt.Errorf("rknn helper timed out: %w", context.DeadlineExceeded)
