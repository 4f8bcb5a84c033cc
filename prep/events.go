package prep

import (
	"time"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/progress"
)

// prep reports through internal/progress: its events are the lines of
// `prep --json` (docs/prep.md) — start, progress, finding, done, skip,
// error, log — and a compiler's output as progress.ToolLog lines, which
// the command layer shows people and keeps off --json stdout.

// progressEvery is how often a step reports its progress (docs/prep.md:
// at most every 500 ms), so CI logs stay small.
const progressEvery = 500 * time.Millisecond

// findingRecord is f as events carry it.
func findingRecord(f artifact.Finding) *progress.FindingRecord {
	r := progress.FindingRecord(f)
	return &r
}

// emitter returns the Func the pipeline reports through: events with
// progress limited to one per progressEvery per step, and every event
// also seen by observe (the run's own bookkeeping).
func emitter(events progress.Func, observe func(progress.Event)) progress.Func {
	return progress.Every(progressEvery, func(e progress.Event) {
		observe(e)
		events.Emit(e)
	})
}
