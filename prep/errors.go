package prep

import (
	"errors"
	"fmt"
	"strings"

	"github.com/edgectl/edgectl/internal/errkind"
)

// prep's errors are plain errors marked with an errkind, so CI can tell a
// bad input (errkind.Input) from a model that cannot take the path
// (errkind.Blocked) and from a vendor tool that broke (errkind.Tool, from
// pulsar2); Hub and registry failures keep the kind their library gave.

// inputErr and blockedErr build errors of their kind.
func inputErr(format string, args ...any) error {
	return errkind.Errorf(errkind.Input, format, args...)
}

func blockedErr(format string, args ...any) error {
	return errkind.Errorf(errkind.Blocked, format, args...)
}

// stepError names the step that failed; its kind is the cause's.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return fmt.Sprintf("prep step %s: %v", e.step, e.err) }
func (e *stepError) Unwrap() error { return e.err }

// inStep attaches the step name to err, unless it already names one.
func inStep(step string, err error) error {
	var se *stepError
	if errors.As(err, &se) {
		return err
	}
	return &stepError{step: step, err: err}
}

// showPath rewrites err's message so that dir (a cache entry) reads as
// show (the source the user named). The cause, and so its kind, stays
// reachable with errors.Is/As.
func showPath(err error, dir, show string) error {
	var se *stepError
	if !errors.As(err, &se) || !strings.Contains(se.err.Error(), dir) {
		return err
	}
	return &stepError{step: se.step, err: &shownError{msg: strings.ReplaceAll(se.err.Error(), dir, show), err: se.err}}
}

type shownError struct {
	msg string
	err error
}

func (e *shownError) Error() string { return e.msg }
func (e *shownError) Unwrap() error { return e.err }
