package serve

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/edgectl/edgectl/engine"
)

// ErrEnginePanic is an engine that panicked on a model. serve recovers it
// so that one model — a malformed or hostile file, or a bug it triggers —
// fails its own requests and never the server; the stack goes to the log,
// not to the client.
var ErrEnginePanic = errors.New("the engine failed on this model (internal error; the stack is in the server log)")

// recovered turns a panic value into an error, logging its stack.
func recovered(p any, what string, logf func(string, ...any)) error {
	logf("panic %s: %v\n%s", what, p, debug.Stack())
	return fmt.Errorf("%w: %s: %v", ErrEnginePanic, what, p)
}

// safeLoad is eng.Load with a panic turned into an error.
func safeLoad(ctx context.Context, eng engine.Engine, path string, opts engine.LoadOptions, logf func(string, ...any)) (m engine.Model, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, recovered(p, "loading "+path, logf)
		}
	}()
	return eng.Load(ctx, path, opts)
}

// safeGenerate is sess.Generate with a panic turned into an error.
func safeGenerate(ctx context.Context, sess engine.Session, req engine.Request, emit func(engine.Token) error, logf func(string, ...any)) (res engine.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = engine.Result{}, recovered(p, "generating", logf)
		}
	}()
	return sess.Generate(ctx, req, emit)
}
