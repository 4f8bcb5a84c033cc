package jinja

import (
	"errors"
	"fmt"
	"sort"
)

// Error is a parse or render error at a place in the template.
type Error struct {
	Line, Col int    // 1-based; Col counts bytes
	Msg       string // what went wrong, never the content of data
	Err       error  // the cause, for errors.Is/As (may be nil)
}

func (e *Error) Error() string {
	return fmt.Sprintf("line %d col %d: %s", e.Line, e.Col, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

var (
	// ErrNotAllowed: the template uses a feature the sandbox refuses
	// (include, import, extends, …).
	ErrNotAllowed = errors.New("not allowed in a sandboxed chat template")
	// ErrLimit: the template exceeded one of its Limits.
	ErrLimit = errors.New("chat template limit exceeded")
	// ErrSyntax: the template is not valid Jinja.
	ErrSyntax = errors.New("chat template syntax error")
)

// lineTable turns byte offsets into line and column.
type lineTable []int // offsets where lines start

func newLineTable(src string) lineTable {
	t := lineTable{0}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			t = append(t, i+1)
		}
	}
	return t
}

func (t lineTable) pos(off int) (line, col int) {
	i := sort.Search(len(t), func(i int) bool { return t[i] > off }) - 1
	if i < 0 {
		i = 0
	}
	return i + 1, off - t[i] + 1
}

// posErr is an error found at a byte offset, before a line table is at hand.
type posErr struct {
	off int
	msg string
	err error
}

func (e *posErr) Error() string { return e.msg }
func (e *posErr) Unwrap() error { return e.err }

func errAt(off int, kind error, format string, args ...any) *posErr {
	return &posErr{off: off, msg: fmt.Sprintf(format, args...), err: kind}
}

// locate turns a *posErr into an *Error; other errors pass unchanged.
func (t lineTable) locate(err error) error {
	var pe *posErr
	if errors.As(err, &pe) {
		l, c := t.pos(pe.off)
		return &Error{Line: l, Col: c, Msg: pe.msg, Err: pe.err}
	}
	return err
}
