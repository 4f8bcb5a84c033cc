// Package axcl is the vendor-CLI lane: it runs compiled ax-llm model
// directories on an Axera NPU by driving `axllm run DIR` (or an older
// `main_axcl_*` binary) through a pseudo-terminal, the only interface those
// runtimes have that streams tokens.
//
// One loaded Model is one runtime process holding the model in the NPU's CMM
// pool. A Session resets the runtime's conversation and sends one prompt
// line; the parser (parse.go) separates generated text from the runtime's
// log lines in both of its log formats.
package axcl

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/tokenizer"
)

// Options configure how the vendor runtime is started and stopped.
type Options struct {
	// Command runs a model; "{dir}" is replaced by the model directory.
	// Default: axllm run {dir}. For a legacy main_axcl_* binary give its
	// full flag list (see ../shared/docs/axera.md §6.1).
	Command []string
	// Env is added to the runtime's environment (e.g. AXLLM_DEVICES=0,1).
	Env []string
	// ResetCommand starts a fresh conversation ("/reset" for axllm; empty
	// for legacy builds that do not know it, which then keep context).
	ResetCommand string
	// QuitCommand asks the runtime to exit ("/q" for axllm, "q" for legacy).
	QuitCommand string
	// StartTimeout bounds the wait for the first "prompt >> " (loading
	// a multi-GiB model takes minutes). Default 5m.
	StartTimeout time.Duration
	// StopTimeout bounds each teardown step (quit, SIGTERM) and the wait for
	// the prompt after an interrupt. Default 10s.
	StopTimeout time.Duration
	// SMI is the axcl-smi command used to check that CMM memory came back
	// after teardown; nil means "axcl-smi" when it is on PATH, else no check.
	SMI []string
	// Device is the card axcl-smi queries (default 0).
	Device int
	// StateDir holds a PID file per runtime the lane starts, so a later
	// start ends the ones a killed server left (recovery.go). Default: the
	// user cache dir's edgectl/axcl/pids.
	StateDir string
	// LockDir is where the runtime keeps its lock files, cleaned when no
	// runtime is left (recovery.go). Default /tmp/axcl.
	LockDir string
	// Logf receives warnings (a conversation truncated to fit the
	// context) and restarts; default: the standard logger.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if len(o.Command) == 0 {
		o.Command = []string{"axllm", "run", "{dir}"}
	}
	if o.ResetCommand == "" && filepath.Base(o.Command[0]) == "axllm" {
		o.ResetCommand = "/reset"
	}
	if o.QuitCommand == "" {
		o.QuitCommand = "/q"
		if strings.HasPrefix(filepath.Base(o.Command[0]), "main_") {
			o.QuitCommand = "q"
		}
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 5 * time.Minute
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 10 * time.Second
	}
	if o.SMI == nil {
		o.SMI = []string{"axcl-smi"}
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return o
}

// Engine starts vendor runtime processes.
type Engine struct{ opts Options }

// New returns the axcl lane.
func New(opts Options) *Engine { return &Engine{opts: opts.withDefaults()} }

// Name is "axcl".
func (e *Engine) Name() string { return "axcl" }

// Load starts the runtime on dir and waits until it prompts for input.
func (e *Engine) Load(ctx context.Context, path string, opts engine.LoadOptions) (engine.Model, error) {
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a compiled ax-llm directory: %w", path, engine.ErrUnsupported)
	}
	cfg, err := readModelDir(path)
	if err != nil {
		return nil, err
	}
	m := &Model{dir: path, opts: e.opts, defaultSystem: cfg.SystemPrompt,
		sysVia: systemMechanism(e.opts.Command), samp: samplingState{base: loadBasePost(path, cfg)}}
	m.countTokens, m.exactTokens = tokenCounter(path)
	m.info = engine.ModelInfo{
		Name:      cfg.ModelName,
		Format:    "axmodel",
		SizeBytes: Footprint(path),
		VocabSize: cfg.TokensEmbedNum,
	}
	m.cmmBefore, m.smiOK = m.cmmUsed()
	if m.sysVia == sysFlag { // the legacy command line carries it
		for i := 1; i < len(e.opts.Command); i++ {
			if e.opts.Command[i-1] == "--system_prompt" {
				m.defaultSystem = e.opts.Command[i]
			}
		}
	}
	m.system = m.defaultSystem
	args, _, err := m.commandFor(m.system, nil)
	if err != nil {
		return nil, err
	}
	if err := m.start(ctx, args); err != nil {
		return nil, err
	}
	if m.smiOK {
		if after, ok := m.cmmUsed(); ok && after > m.cmmBefore {
			m.info.SizeBytes = (after - m.cmmBefore) << 20
		}
	}
	return m, nil
}

// tokenCounter counts tokens with the model's own tokenizer (the
// tokenizer/ directory the compile step writes) when it loads (exact is
// true), else estimates them.
func tokenCounter(dir string) (count func(string) int, exact bool) {
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer"))
	if err != nil {
		return estimateTokens, false
	}
	return func(s string) int { return len(tok.Encode(s, false)) }, true
}

// ErrExited reports that the runtime process is gone; the model must be
// reloaded.
var ErrExited = errors.New("vendor runtime exited")
