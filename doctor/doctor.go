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

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/format/tokjson"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/pulsar2"
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
	Kind     string    `json:"kind,omitempty"` // "ax-llm" for a compiled directory; empty for a checkpoint
	Verdict  string    `json:"verdict"`        // pass, fixable, blocked
	Findings []Finding `json:"findings"`
}

// Err is the verdict as an error: nil for pass, an errkind.Fixable error
// when only fixable findings stand, errkind.Blocked when one blocks. The
// command layer exits with the kind's code (3 or 4); the report itself is
// the explanation, so the message only names the verdict.
func (r *Report) Err() error {
	switch r.Verdict {
	case "blocked":
		return errkind.Errorf(errkind.Blocked, "%s: blocked for %s", r.Path, r.Target)
	case "fixable":
		return errkind.Errorf(errkind.Fixable, "%s: fixable findings for %s", r.Path, r.Target)
	}
	return nil
}

// Options for Check.
type Options struct {
	Target string // ax650 (default), or any name of it in pulsar2's chip table (AX8850, AX-M1, …)
	// KVCacheLen is the length the user intends to build with (0: read
	// kv_cache_len from config.json, else the build default).
	KVCacheLen int
	// Log is a runtime log (axllm, main_*) to explain, for a compiled
	// ax-llm directory.
	Log string
}

// targetNames lists doctor's --target names: the AX650 rows of pulsar2's
// chip table.
const targetNames = "ax650, ax650n, ax650a, ax8850, ax-m1, llm-8850 (any case)"

// Check examines the checkpoint in dir.
func Check(dir string, opts Options) (*Report, error) {
	// Target names come from pulsar2's chip table; doctor's checks are
	// about the AX650 NPU (AX650N/AX650A, AX8850 boards, AX-M1 cards).
	if !pulsar2.IsAX650(opts.Target) {
		return nil, errkind.Errorf(errkind.Usage, "unknown --target %q: doctor checks for the AX650 NPU: %s", opts.Target, targetNames)
	}
	t := "ax650"
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: doctor checks a checkpoint directory", dir)
	}
	c := &checker{dir: dir, opts: opts, r: &Report{Path: dir, Target: t}}
	if axllm.IsCompiled(dir) {
		// pulsar2 output: the runtime's checks, not a checkpoint's.
		c.r.Kind = "ax-llm"
		c.checkCompiled()
		c.r.Finish()
		return c.r, nil
	}
	c.run()
	c.r.Finish()
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

// Finish orders the findings worst first and sets the verdict from the
// worst one. Check calls it; a caller that gathers findings elsewhere
// (cmd/edgectl's doctor --device, from engine/axcl's board checks) calls it
// on the report it fills.
func (r *Report) Finish() {
	sort.SliceStable(r.Findings, func(i, j int) bool {
		return r.Findings[i].Severity.rank() > r.Findings[j].Severity.rank()
	})
	worst := 0
	for _, f := range r.Findings {
		worst = max(worst, f.Severity.rank())
	}
	r.Verdict = map[int]string{0: "pass", 1: "pass", 2: "fixable", 3: "blocked"}[worst]
	if r.Findings == nil {
		r.Findings = []Finding{}
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
func isCompiledAxllm(dir string) bool { return axllm.IsCompiled(dir) }

func (c *checker) tokenizer() (*tokjson.File, *tokjson.Config, error) {
	tok, err := tokjson.Load(filepath.Join(c.dir, "tokenizer.json"))
	if err != nil {
		tok = nil
	}
	tc, _ := tokjson.LoadConfig(c.dir)
	return tok, tc, err
}
