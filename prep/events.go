package prep

import (
	"sync"
	"time"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/cli"
)

// Event is one line of `prep --json` output. One struct for every event
// type keeps the wire format in one place; unused fields are omitted.
type Event struct {
	Event string `json:"event"` // start, progress, finding, done, skip, error, result
	Step  string `json:"step,omitempty"`
	Key   string `json:"key,omitempty"` // the step's cache key

	// skip
	Reason string `json:"reason,omitempty"`

	// progress
	Done  int64  `json:"done,omitempty"`
	Total int64  `json:"total,omitempty"`
	Unit  string `json:"unit,omitempty"`

	// finding
	Finding *artifact.Finding `json:"finding,omitempty"`

	// done, skip, result: timings live here and in the log, never in OUT/
	DurationMS int64 `json:"duration_ms,omitempty"`

	// error
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`

	// result
	Out            string `json:"out,omitempty"`
	Files          int    `json:"files,omitempty"`
	Bytes          int64  `json:"bytes,omitempty"`
	ManifestSHA256 string `json:"manifest_sha256,omitempty"`
	Ref            string `json:"ref,omitempty"`
	Digest         string `json:"digest,omitempty"`

	Message string `json:"message,omitempty"`
}

// Reporter sends events to --json stdout and people's lines to stderr.
// Without an io (a zero Reporter) it discards everything.
type Reporter struct {
	io     *cli.IO
	onEmit func(Event) // observes every event (the run's own bookkeeping)

	mu       sync.Mutex
	lastProg time.Time
}

// Emit sends e as a JSON line (with --json) and logs it for people.
func (r *Reporter) Emit(e Event) {
	if r == nil {
		return
	}
	if r.onEmit != nil {
		r.onEmit(e)
	}
	if r.io == nil {
		return
	}
	r.io.Event(e)
	if r.io.JSON {
		return
	}
	switch e.Event {
	case "start":
		r.io.Logf("• %s…", e.Step)
	case "skip":
		r.io.Logf("• %s: skipped (%s)", e.Step, e.Reason)
	case "done":
		r.io.Logf("• %s: done in %s", e.Step, time.Duration(e.DurationMS)*time.Millisecond)
	case "finding":
		f := e.Finding
		line := "  " + f.Severity + " " + f.Code + ": " + f.Message
		if f.Fix != "" {
			line += " (fix: " + f.Fix + ")"
		}
		r.io.Logf("%s", line)
	case "error":
		// root.go prints the error itself; nothing to add.
	default:
		if e.Message != "" {
			r.io.Logf("  %s", e.Message)
		}
	}
}

// Progress reports step progress: a bar on a terminal, and a JSON event at
// most every 500 ms (and at the end) so CI logs stay small.
func (r *Reporter) Progress(step string, done, total int64, unit string) {
	if r == nil || r.io == nil || !r.io.JSON {
		return
	}
	r.mu.Lock()
	now := time.Now()
	if done != total && now.Sub(r.lastProg) < 500*time.Millisecond {
		r.mu.Unlock()
		return
	}
	r.lastProg = now
	r.mu.Unlock()
	r.io.Event(Event{Event: "progress", Step: step, Done: done, Total: total, Unit: unit})
}

// Log passes a tool's log line to people (stderr), never to --json stdout:
// compiler logs are long and belong in the CI log, not the event stream.
func (r *Reporter) Log(line string) {
	if r == nil || r.io == nil {
		return
	}
	r.io.Logf("  | %s", line)
}
