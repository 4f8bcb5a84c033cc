package hub

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/edgectl/edgectl/internal/cli"
)

// Kind classifies the failures a user can act on; each has its own exit code.
type Kind int

const (
	KindOther       Kind = iota
	KindNotFound         // repository, revision or file does not exist (or is private)
	KindAuth             // gated or private: accept the licence or set HF_TOKEN
	KindOffline          // offline and not in the cache
	KindChecksum         // the download was corrupt twice
	KindDiskFull         // no space left on device
	KindNetwork          // connection failures outlasted the retries
	KindUnavailable      // 429/5xx outlasted the retries
)

// Error is a Hub or cache failure with a one-line, actionable message.
type Error struct {
	Kind Kind
	Msg  string
	Err  error // cause, kept for errors.Is/As; not repeated in Msg unless useful
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode maps the kind to edgectl's stable exit codes.
func (e *Error) ExitCode() int {
	switch e.Kind {
	case KindNotFound:
		return cli.ExitNotFound
	case KindAuth:
		return cli.ExitAuth
	case KindOffline:
		return cli.ExitOffline
	case KindChecksum:
		return cli.ExitChecksum
	case KindDiskFull:
		return cli.ExitDiskFull
	case KindNetwork:
		return cli.ExitNetwork
	case KindUnavailable:
		return cli.ExitUnavailable
	}
	return cli.ExitError
}

func newErr(k Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// KindOf returns the Kind of err, KindOther when it is not a hub error.
func KindOf(err error) Kind {
	var he *Error
	if errors.As(err, &he) {
		return he.Kind
	}
	return KindOther
}

// diskErr turns ENOSPC/EDQUOT on a cache write into a KindDiskFull error that
// says where, and passes any other error through.
func diskErr(err error, path string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return newErr(KindDiskFull, err, "no space left on device writing %s: free space or point HF_HUB_CACHE (or --local-dir) at a larger disk", path)
	}
	return err
}
