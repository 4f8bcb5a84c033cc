package main

import (
	"errors"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/progress"
)

// runExplainedBuild runs a vendor compiler build (pulsar2 build, rknn
// build) with its progress events shown. With --json it prints one
// document, the result, and no event lines; a failure the build explained
// (F: the package's *BuildError) comes as a build_failed event with its
// kind, log line, fix and log tail, before the error line. The caller
// prints the result for people when the error is nil and --json is off.
func runExplainedBuild[F error, R any](io *cli.IO, onEvent *progress.Func, build func() (R, error)) (R, error) {
	view := newEventView(io, false)
	*onEvent = view.on
	res, err := build()
	view.finish()
	var failure F
	switch {
	case err != nil && io.JSON && errors.As(err, &failure):
		io.Event(map[string]any{"event": "build_failed", "failure": failure})
	case err == nil && io.JSON:
		err = io.WriteJSON(res)
	}
	return res, err
}
