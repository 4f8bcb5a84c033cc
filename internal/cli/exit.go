// Package cli holds what every edgectl command shares: exit codes, the
// machine/human output split, and progress bars that appear only on a terminal.
package cli

import (
	"errors"
	"fmt"
)

// Exit codes are part of edgectl's interface: scripts and CI branch on them,
// so a code, once given a meaning, keeps it. docs/exit-codes.md lists them.
const (
	ExitOK      = 0 // success
	ExitError   = 1 // bad input or a failure edgectl can explain
	ExitUsage   = 2 // wrong flags or arguments
	ExitFixable = 3 // doctor: only findings that `edgectl patch`/`quant` can fix
	ExitBlocked = 4 // doctor/prep: the model cannot take this path
	ExitTool    = 5 // an external tool (container runtime, compiler) failed

	// hub / pull
	ExitNotFound    = 10 // repository, revision or file does not exist
	ExitAuth        = 11 // gated or private: accept the licence or set HF_TOKEN
	ExitOffline     = 12 // offline mode and nothing cached
	ExitChecksum    = 13 // download corrupt after a retry
	ExitDiskFull    = 14 // no space left on device
	ExitNetwork     = 15 // the network failed after all retries
	ExitUnavailable = 16 // server busy or overloaded
)

// Error carries an exit code with an error. Library packages return plain
// errors; the command layer wraps them with the code that fits.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Exit wraps err with code; a nil err stays nil.
func Exit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Exitf is Exit with a formatted message.
func Exitf(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Usagef reports a usage error (exit 2).
func Usagef(format string, args ...any) error { return Exitf(ExitUsage, format, args...) }

// CodeOf returns the exit code for err: its Error code, or a code a
// library error declares with an ExitCode() method, else ExitError.
func CodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *Error
	if errors.As(err, &ee) {
		return ee.Code
	}
	var coder interface{ ExitCode() int }
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	return ExitError
}
