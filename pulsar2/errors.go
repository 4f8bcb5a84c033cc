package pulsar2

import (
	"strings"

	"github.com/edgectl/edgectl/internal/errkind"
)

// Failures of a build, finer than an errkind: which known compiler fault
// the log shows, and so which fix to print. They are stable: --json output
// carries them (build_failed's "kind"). Unwrap turns them into the errkind
// the exit code comes from.
const (
	FailInput     = "input"      // the model directory or the options are wrong
	FailRuntime   = "runtime"    // no container runtime, or it failed to start
	FailImage     = "image"      // the pulsar2 image is missing or broken
	FailTile      = "tile"       // TileFailException
	FailGroupN    = "groupn"     // AssertionError invalid groupN
	FailGroupSize = "group_size" // KeyError 'group_size'
	FailFP32DType = "fp32_dtype" // KeyError for FP32 in get_ifm_dtype
	FailLambert   = "lambert"    // no LambertBackend / backend.lambert
	FailOOM       = "oom"        // killed for memory
	FailArgs      = "args"       // pulsar2 rejected an argument
	FailCompiler  = "compiler"   // any other compiler failure
	FailOutput    = "output"     // the compiler's output is incomplete
)

// BuildError is a build failure explained: what happened, the log line that
// shows it, and how to fix it.
type BuildError struct {
	Kind string   `json:"kind"`
	Msg  string   `json:"message"`
	Fix  string   `json:"fix,omitempty"`
	Line string   `json:"log_line,omitempty"` // the log line that identified the failure
	Tail []string `json:"log_tail,omitempty"` // the last lines of the log
}

func (e *BuildError) Error() string {
	var b strings.Builder
	b.WriteString(e.Msg)
	if e.Line != "" {
		b.WriteString(" [log: " + strings.TrimSpace(e.Line) + "]")
	}
	if e.Fix != "" {
		b.WriteString("; fix: " + e.Fix)
	}
	return b.String()
}

// Unwrap gives the error's errkind: bad input for FailInput, a failed
// external tool for everything the compiler or the container runtime did.
func (e *BuildError) Unwrap() error {
	if e.Kind == FailInput {
		return errkind.Input
	}
	return errkind.Tool
}

func inputErr(msg, fix string) *BuildError { return &BuildError{Kind: FailInput, Msg: msg, Fix: fix} }
