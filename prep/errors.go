package prep

import (
	"errors"
	"fmt"
	"strings"

	"github.com/edgectl/edgectl/internal/cli"
)

// Kind classifies why a pipeline stopped, so CI can tell a bad input from a
// model that cannot take the path and from a vendor tool that broke.
type Kind int

const (
	// KindOther keeps the exit code the cause declares (hub errors carry
	// their own: not found, auth, offline, …), else 1.
	KindOther   Kind = iota
	KindInput        // bad SOURCE, options or checkpoint: exit 1
	KindBlocked      // doctor found a blocking fault for this target: exit 4
	KindTool         // an external tool (container runtime, compiler) failed: exit 5
)

// Error is a step failure: which step, why, and the exit code it maps to.
type Error struct {
	Kind Kind
	Step string
	Err  error
}

func (e *Error) Error() string {
	if e.Step == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("prep step %s: %v", e.Step, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode maps the kind onto edgectl's stable exit codes.
func (e *Error) ExitCode() int {
	switch e.Kind {
	case KindInput:
		return cli.ExitError
	case KindBlocked:
		return cli.ExitBlocked
	case KindTool:
		return cli.ExitTool
	}
	return cli.CodeOf(e.Err)
}

// inputErr and blockedErr build errors of their kind (tool failures come
// from pulsar2 with their own exit code).
func inputErr(format string, args ...any) error {
	return &Error{Kind: KindInput, Err: fmt.Errorf(format, args...)}
}

func blockedErr(format string, args ...any) error {
	return &Error{Kind: KindBlocked, Err: fmt.Errorf(format, args...)}
}

// inStep attaches the step name to err, keeping a kind the step chose.
func inStep(step string, err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		if pe.Step == "" {
			return &Error{Kind: pe.Kind, Step: step, Err: pe.Err}
		}
		return err
	}
	return &Error{Kind: KindOther, Step: step, Err: err}
}

// showPath rewrites err's message so that dir (a cache entry) reads as
// show (the source the user named). The cause stays reachable with
// errors.Is/As, and the exit code is unchanged.
func showPath(err error, dir, show string) error {
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Err.Error(), dir) {
		return err
	}
	return &Error{Kind: pe.Kind, Step: pe.Step, Err: &shownError{msg: strings.ReplaceAll(pe.Err.Error(), dir, show), err: pe.Err}}
}

type shownError struct {
	msg string
	err error
}

func (e *shownError) Error() string { return e.msg }
func (e *shownError) Unwrap() error { return e.err }
