// Package doctor checks a Hugging Face checkpoint against what an NPU
// toolchain accepts and reports findings, each with its evidence and the
// edgectl command that fixes it. The checks encode the faults users hit by
// hand with the Axera pulsar2 compiler and the ax-llm runtime.
package doctor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/format/tokjson"
	"github.com/edgectl/edgectl/internal/cli"
)

// Severity orders findings; the worst one decides the verdict.
type Severity string

const (
	Info     Severity = "info"     // worth knowing, no action needed
	Warning  Severity = "warning"  // may break at build or run time
	Fixable  Severity = "fixable"  // an edgectl command repairs it
	Quantize Severity = "quantize" // weights must be quantized (edgectl quant)
	Blocking Severity = "blocking" // this model cannot take the path
)

func (s Severity) rank() int {
	switch s {
	case Warning:
		return 1
	case Fixable, Quantize:
		return 2
	case Blocking:
		return 3
	}
	return 0
}

// Finding is one result of a check.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Evidence string   `json:"evidence"`
	Fix      string   `json:"fix,omitempty"` // the command that fixes it
}

// Report is the verdict for one checkpoint.
type Report struct {
	Path     string    `json:"path"`
	Target   string    `json:"target"`
	Verdict  string    `json:"verdict"` // pass, fixable, blocked
	Findings []Finding `json:"findings"`
}

// ExitCode maps the verdict to doctor's exit code: 0 pass, 3 only fixable
// findings, 4 blocking findings.
func (r *Report) ExitCode() int {
	switch r.Verdict {
	case "blocked":
		return cli.ExitBlocked
	case "fixable":
		return cli.ExitFixable
	}
	return cli.ExitOK
}

// Options for Check.
type Options struct {
	Target string // ax650 (default); ax8850 and ax650n are aliases
	// KVCacheLen is the length the user intends to build with (0: read
	// kv_cache_len from config.json, else the build default).
	KVCacheLen int
}

// Targets doctor knows.
var targetAliases = map[string]string{"ax650": "ax650", "ax650n": "ax650", "ax650a": "ax650", "ax8850": "ax650", "llm8850": "ax650", "ax-m1": "ax650"}

// Check examines the checkpoint in dir.
func Check(dir string, opts Options) (*Report, error) {
	target := strings.ToLower(opts.Target)
	if target == "" {
		target = "ax650"
	}
	t, ok := targetAliases[target]
	if !ok {
		return nil, cli.Usagef("unknown --target %q: doctor knows ax650 (AX650N/AX650A/AX8850 boards and AX-M1 cards)", opts.Target)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: doctor checks a checkpoint directory", dir)
	}
	c := &checker{dir: dir, opts: opts, r: &Report{Path: dir, Target: t}}
	c.run()
	c.finish()
	return c.r, nil
}

type checker struct {
	dir  string
	opts Options
	r    *Report
	cfg  *hfconfig.Config
	ck   *safetensors.Checkpoint
}

func (c *checker) add(f Finding) { c.r.Findings = append(c.r.Findings, f) }

func (c *checker) run() {
	if !c.checkConfig() {
		return
	}
	c.checkFamily()
	c.checkEOS()
	c.checkMoE()
	c.checkRoPE()
	c.checkKVLen()
	ck, err := safetensors.OpenCheckpoint(c.dir)
	switch {
	case errors.Is(err, safetensors.ErrNoWeights):
		c.add(Finding{ID: "no-weights", Severity: Blocking, Message: "no safetensors weights",
			Evidence: fmt.Sprintf("%s has no model.safetensors, shard index or *.safetensors", c.dir),
			Fix:      "pull the weights: edgectl pull ORG/NAME (pytorch .bin checkpoints must be converted to safetensors first)"})
		return
	case err != nil:
		c.add(Finding{ID: "bad-weights", Severity: Blocking, Message: "safetensors files are invalid",
			Evidence: err.Error(), Fix: "download the checkpoint again: edgectl pull ORG/NAME"})
		return
	}
	c.ck = ck
	defer ck.Close()
	c.checkDTypes()
	c.checkQuantization()
	c.checkNorms()
	c.checkVocab()
	c.checkTokenizer()
}

func (c *checker) finish() {
	sort.SliceStable(c.r.Findings, func(i, j int) bool {
		return c.r.Findings[i].Severity.rank() > c.r.Findings[j].Severity.rank()
	})
	worst := 0
	for _, f := range c.r.Findings {
		worst = max(worst, f.Severity.rank())
	}
	c.r.Verdict = map[int]string{0: "pass", 1: "pass", 2: "fixable", 3: "blocked"}[worst]
	if c.r.Findings == nil {
		c.r.Findings = []Finding{}
	}
}

func (c *checker) fixCmd(sub string) string {
	return fmt.Sprintf("edgectl %s %s -o %s", sub, quote(c.dir), quote(strings.TrimRight(c.dir, "/")+"-fixed"))
}

func quote(s string) string {
	if strings.ContainsAny(s, " \t'\"$") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// isCompiledAxllm reports whether dir already holds pulsar2 output.
func isCompiledAxllm(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*_post.axmodel"))
	return len(m) > 0
}

func (c *checker) tokenizer() (*tokjson.File, *tokjson.Config, error) {
	tok, err := tokjson.Load(filepath.Join(c.dir, "tokenizer.json"))
	if err != nil {
		tok = nil
	}
	tc, _ := tokjson.LoadConfig(c.dir)
	return tok, tc, err
}
