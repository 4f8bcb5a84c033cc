package pulsar2

import (
	"strings"

	"github.com/edgectl/edgectl/internal/cli"
)

// Failure kinds of a build. They are stable: --json output carries them.
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

// ExitCode maps input faults to cli.ExitError and everything the compiler
// or the container runtime did to cli.ExitTool.
func (e *BuildError) ExitCode() int {
	if e.Kind == FailInput {
		return cli.ExitError
	}
	return cli.ExitTool
}

func inputErr(msg, fix string) *BuildError { return &BuildError{Kind: FailInput, Msg: msg, Fix: fix} }
