// Package cpu is edgectl's pure-Go inference engine: Llama, Qwen2, Qwen3 and
// BitNet models from safetensors checkpoints, GGUF (F32/F16/BF16, TQ1_0/TQ2_0,
// and the block types llama-quantize writes: Q8_0, Q4_0, Q4_K_M, …) and
// .h1b files, with ternary weights multiplied in their packed form on int8
// activations. It is the default engine of `serve` and `run`.
package cpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/tokenizer"
	"github.com/edgectl/edgectl/format/chattemplate"
)

// New returns the CPU engine. It holds no state: each loaded Model owns its
// weights, mappings and worker goroutines, so several can be loaded at once.
func New() engine.Engine { return cpuEngine{} }

type cpuEngine struct{}

func (cpuEngine) Name() string { return "cpu" }

// Load opens a checkpoint directory (config.json + *.safetensors), a .gguf
// or a .h1b file.
func (cpuEngine) Load(ctx context.Context, path string, opts engine.LoadOptions) (engine.Model, error) {
	set, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var m *model
	switch {
	case st.IsDir():
		if _, err := os.Stat(filepath.Join(path, "config.json")); err != nil {
			return nil, fmt.Errorf("%s: %w: no config.json (the CPU engine runs Hugging Face checkpoint directories, .gguf and .h1b files)", path, engine.ErrUnsupported)
		}
		m, err = loadSafetensors(path)
	case strings.HasSuffix(path, ".gguf"):
		m, err = loadGGUF(path)
	case strings.HasSuffix(path, ".h1b"):
		m, err = loadH1B(path)
	default:
		return nil, fmt.Errorf("%s: %w: the CPU engine reads checkpoint directories, .gguf and .h1b files", path, engine.ErrUnsupported)
	}
	if err != nil {
		return nil, err
	}
	m.kern = set.kernels()
	m.place(set)
	// The context is decided once the weights are in memory, so that the
	// memory bound counts what is left for the KV cache.
	if m.arch.ctx, err = contextLength(&m.arch, opts.ContextLength); err != nil {
		m.Close()
		return nil, err
	}
	m.pool = newPool(opts.Threads)
	m.freqs = m.arch.ropeFreqs()
	m.info.ContextLength = m.arch.ctx
	m.info.VocabSize = m.arch.vocab
	m.info.Architecture = m.arch.name
	m.info.EOSTokenIDs = m.arch.eos
	if m.info.Name == "" {
		m.info.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if m.tmpl != nil {
		m.info.ChatTemplate = m.tmpl.Source()
	}
	m.info.SizeBytes = m.weightBytes()
	m.describeEmbedding()
	if m.enc != nil {
		return m.encoderModel(), nil // bert_load.go
	}
	return m, nil
}

// model is a loaded model; safe for concurrent Sessions (weights are
// read-only, each Session owns its cache).
type model struct {
	arch arch
	w    weights
	// kern is the kernel table every product, norm and attention pass of
	// this model runs, chosen at Load (settings.kernels) and never changed.
	kern    *kernels
	freqs   []float64
	pool    *pool
	tok     *tokenizer.Tokenizer
	tmpl    *chattemplate.Template
	pooling poolSpec // how Embed pools (embed_pooling.go)
	enc     *encoder // a BERT-family encoder's own weights (bert.go); nil for decoders
	info    engine.ModelInfo
	closers []ioCloser
	mem     *arena
	// life orders Close after running generations: Generate holds it for
	// reading, Close for writing (weights are unmapped on Close).
	life   sync.RWMutex
	closed bool
}

func (m *model) Info() engine.ModelInfo { return m.info }

func (m *model) NewSession() (engine.Session, error) {
	if m.tok == nil {
		return nil, fmt.Errorf("model %s has no tokenizer (put tokenizer.json beside it, or a .htok sidecar for .h1b)", m.info.Name)
	}
	return &session{m: m, st: newState(m)}, nil
}

// Close releases the weights. It waits for generations in progress (cancel
// their contexts first); later Generate calls fail.
func (m *model) Close() error {
	m.life.Lock()
	defer m.life.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.pool != nil {
		m.pool.close()
	}
	var first error
	for _, c := range m.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	m.closers = nil
	return first
}

// weightBytes is what one token's forward pass reads from weight memory:
// every layer matrix, the head, the norms.
func (m *model) weightBytes() int64 {
	var n int64
	for _, L := range m.w.layers {
		for _, w := range []linear{L.q, L.k, L.v, L.o, L.gate, L.up, L.down} {
			n += w.size()
		}
	}
	if m.w.head == nil { // an encoder (bert_load.go sizes its own)
		return n
	}
	return n + m.w.head.size() + m.w.exact.bytes() // the candidates' float rows (head4x.go)
}

// quantization summarizes the layer matrices' packing for ModelInfo.
func (m *model) quantization() string {
	if len(m.w.layers) == 0 {
		return ""
	}
	return m.w.layers[0].gate.format()
}
