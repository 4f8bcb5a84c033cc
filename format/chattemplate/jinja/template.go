package jinja

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Template is a parsed template; it is immutable, so concurrent Renders
// are safe.
type Template struct {
	body  []stmt
	lines lineTable
	lim   Limits
}

// ErrInternal marks a bug in the interpreter caught at the API boundary
// (a panic turned into an error): a hostile template never takes the
// process down.
var ErrInternal = errors.New("internal error in the template interpreter")

// Parse compiles src. Limits bound the source size and nesting here and the
// renders later; zero fields take DefaultLimits.
func Parse(src string, lim Limits) (t *Template, err error) {
	lim = lim.withDefaults()
	if len(src) > lim.MaxSourceBytes {
		return nil, &Error{Line: 1, Col: 1, Msg: fmt.Sprintf("template is %d bytes, over the %d-byte limit", len(src), lim.MaxSourceBytes), Err: ErrLimit}
	}
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("%w: %v", ErrInternal, r)
		}
	}()
	src = normalizeSource(src)
	lines := newLineTable(src)
	toks, err := lex(src)
	if err != nil {
		return nil, lines.locate(err)
	}
	body, err := parse(toks, lim)
	if err != nil {
		return nil, lines.locate(err)
	}
	return &Template{body: body, lines: lines, lim: lim}, nil
}

// Render runs the template with vars (values from ValueOf or FromJSON, or
// *Func for functions). It stops at ctx's deadline or, when ctx has none,
// after Limits.Timeout.
func (t *Template) Render(ctx context.Context, vars map[string]Value) (out string, err error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(t.lim.Timeout)
	}
	e := &evaluator{
		ctx:      ctx,
		lim:      t.lim,
		deadline: deadline,
		vars:     vars,
		out:      &outBuf{max: t.lim.MaxOutputBytes},
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: %v", ErrInternal, r)
		}
	}()
	if err := e.checkTime(); err != nil {
		return "", err
	}
	if _, err := e.execBody(t.body, &scope{top: map[string]Value{}}); err != nil {
		return "", t.lines.locate(err)
	}
	return string(e.out.b), nil
}
