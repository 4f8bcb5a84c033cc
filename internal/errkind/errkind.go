// Package errkind is the one set of failure kinds edgectl's libraries mark
// their errors with. A kind says what the user can do about a failure (fix
// the input, log in, free disk space, retry later); cmd/edgectl maps each
// kind to its stable exit code (docs/exit-codes.md) in one table, so no
// library knows exit codes and no command guesses a kind from a message.
//
// Libraries return plain errors: errkind.Errorf for a new one, errkind.Wrap
// to mark one they pass on. A marked error keeps its message, and both its
// kind and its cause stay reachable with errors.Is and errors.As.
package errkind

import (
	"errors"
	"fmt"
)

// Kind is a failure class. It is an error itself, so errors.Is(err, kind)
// asks whether err was marked with it.
type Kind uint8

// The kinds, one per documented exit code other than success and signals.
const (
	None     Kind = iota // not a kind: what Of returns for an unmarked error
	Input                // bad input: a file, tensor or option is wrong, and the message says how to fix it
	Usage                // wrong flags or arguments (or a bad setting in the environment)
	Fixable              // only findings that an `edgectl patch`/`quant` command repairs
	Blocked              // the model cannot take this path (MoE, unreadable dtype, …)
	Tool                 // an external tool (container runtime, compiler) failed
	NotFound             // repository, revision or file does not exist (Hub or OCI registry)
	Auth                 // gated or private, or the registry refused the credentials
	Offline              // offline mode and not in the cache
	Checksum             // content does not match its checksum or digest
	DiskFull             // no room left for what must be written
	Network              // the network failed after all retries
	Busy                 // the server stayed busy or overloaded after retries
	numKinds
)

var names = [numKinds]string{
	None: "none", Input: "input", Usage: "usage", Fixable: "fixable", Blocked: "blocked", Tool: "tool",
	NotFound: "not found", Auth: "auth", Offline: "offline", Checksum: "checksum",
	DiskFull: "disk full", Network: "network", Busy: "busy",
}

// All lists every kind (None excluded), for tables that must cover them.
func All() []Kind {
	ks := make([]Kind, 0, numKinds-1)
	for k := None + 1; k < numKinds; k++ {
		ks = append(ks, k)
	}
	return ks
}

func (k Kind) String() string {
	if k < numKinds {
		return names[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Error makes a Kind an error, so that it can sit in an error chain.
func (k Kind) Error() string { return k.String() }

// marked is an error with a kind: the message is err's, unchanged.
type marked struct {
	kind Kind
	err  error
}

func (e *marked) Error() string { return e.err.Error() }

// Unwrap lists the kind first: Of finds the outermost mark, so a caller
// that re-marks an error (a prep step calling bad input what a library
// reported) decides its kind.
func (e *marked) Unwrap() []error { return []error{e.kind, e.err} }

// Wrap marks err with kind k, keeping its message. A nil err stays nil.
func Wrap(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &marked{kind: k, err: err}
}

// Errorf is fmt.Errorf marked with kind k (%w keeps a cause reachable).
func Errorf(k Kind, format string, args ...any) error {
	return &marked{kind: k, err: fmt.Errorf(format, args...)}
}

// Of returns the kind err was marked with, the outermost mark when there
// are several, or None.
func Of(err error) Kind {
	var k Kind
	if errors.As(err, &k) {
		return k
	}
	return None
}
