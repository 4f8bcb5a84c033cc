package errkind

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestWrapKeepsMessageAndCause(t *testing.T) {
	cause := &fs.PathError{Op: "open", Path: "/m/config.json", Err: fs.ErrNotExist}
	err := Wrap(NotFound, cause)
	if err.Error() != cause.Error() {
		t.Errorf("message %q, want %q", err, cause)
	}
	var pe *fs.PathError
	if !errors.Is(err, NotFound) || !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || Of(err) != NotFound {
		t.Errorf("%v: kind %v, cause reachable %v", err, Of(err), errors.As(err, &pe))
	}
	if Wrap(Usage, nil) != nil {
		t.Error("Wrap(k, nil) is not nil")
	}
}

func TestErrorfFormatsAndWrapsCause(t *testing.T) {
	cause := errors.New("HTTP 404")
	err := Errorf(NotFound, "repository %s not found: %w", "acme/tiny", cause)
	if err.Error() != "repository acme/tiny not found: HTTP 404" || !errors.Is(err, cause) || !errors.Is(err, NotFound) || errors.Is(err, Auth) {
		t.Errorf("%v: kind %v", err, Of(err))
	}
}

// TestOutermostKindWins: a caller that re-marks an error decides its kind
// (prep calls bad input what a library reported as usage); fmt.Errorf
// wrappers in between do not hide a kind.
func TestOutermostKindWins(t *testing.T) {
	inner := Errorf(Usage, "unknown --target %q", "npu")
	outer := Wrap(Input, fmt.Errorf("prep step doctor: %w", inner))
	if Of(outer) != Input || !errors.Is(outer, Usage) {
		t.Errorf("outer kind %v", Of(outer))
	}
	if Of(fmt.Errorf("pull: %w", inner)) != Usage {
		t.Error("fmt.Errorf hid the kind")
	}
	if Of(errors.New("plain")) != None || Of(nil) != None {
		t.Error("an unmarked error has a kind")
	}
	joined := errors.Join(errors.New("plain"), Wrap(DiskFull, errors.New("no space")))
	if Of(joined) != DiskFull {
		t.Errorf("joined: kind %v", Of(joined))
	}
}

func TestKindsAreDistinctAndNamed(t *testing.T) {
	seen := map[string]Kind{}
	for _, k := range All() {
		if k == None || k.String() == "" {
			t.Errorf("kind %d has no name", k)
		}
		if o, dup := seen[k.String()]; dup {
			t.Errorf("kinds %d and %d are both %q", o, k, k)
		}
		seen[k.String()] = k
	}
	if len(seen) != int(numKinds)-1 {
		t.Errorf("All lists %d kinds, want %d", len(seen), numKinds-1)
	}
}
