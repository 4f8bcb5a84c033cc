package rknn

import "github.com/edgectl/edgectl/pulsar2"

// Failures of an rknn build, finer than an errkind: which known toolkit
// fault the log shows, and so which fix to print. They are stable:
// --json's build_failed event carries them. FailInput is pulsar2's, so a
// BuildError's errkind (bad input, or a failed tool for everything else)
// comes from pulsar2.BuildError.Unwrap.
const (
	FailInput    = pulsar2.FailInput // the chain or the options are wrong
	FailRuntime  = "runtime"         // no container runtime or Python, or it failed to start
	FailImage    = "image"           // the image is missing, or has no rknn-toolkit2
	FailRegtask  = "regtask"         // REGTASK Overflow (0xe010): a vector op over the scratchpad
	FailFused    = "fused"           // the toolkit fused the tiles back, then overflowed
	FailOpset    = "opset"           // the shard's opset is newer than the toolkit reads
	FailOp       = "op"              // an operator the toolkit cannot lower
	FailConfig   = "config"          // rknn.config() refused an option (disable_rules, float_dtype)
	FailOOM      = "oom"             // killed for memory
	FailTimeout  = "timeout"         // a shard ran past --timeout
	FailCompiler = "compiler"        // any other toolkit failure
	FailOutput   = "output"          // the toolkit reported success but wrote no .rknn
)

// BuildError is a build failure explained as pulsar2 build explains its
// own (kind, message, the log line that shows it, the fix, the log's
// tail), and the shard it happened on.
type BuildError struct {
	Shard string `json:"shard,omitempty"` // the .onnx file being compiled
	pulsar2.BuildError
}

func (e *BuildError) Error() string {
	if e.Shard != "" {
		return e.Shard + ": " + e.BuildError.Error()
	}
	return e.BuildError.Error()
}

// Unwrap gives the errkind (pulsar2.BuildError's rule).
func (e *BuildError) Unwrap() error { return e.BuildError.Unwrap() }
