package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/progress"
)

// eventView is the one place where library events (internal/progress)
// become output. With --json, a command that streams events (pull, prep,
// push, quant pack) prints each as one JSON line on stdout; a command
// whose --json output is one document (pulsar2 build, run and serve
// pulling a Hub model) prints them as for people instead, on stderr. For
// people: log lines on stderr (none with --quiet) and progress bars, which
// cli.IO.Bar draws only on an interactive terminal (not in CI, not with
// --json or --quiet). A compiler's own log (progress.ToolLog) goes to
// stderr in every mode.
type eventView struct {
	io    *cli.IO
	lines bool // with --json, events are the command's stdout

	mu    sync.Mutex
	bars  map[string]*progressbar.ProgressBar // by step; "" is a download's bar
	files progress.FileSum                    // a download's per-file bytes, summed
}

// newEventView renders for io; lines says the command's --json output is
// the event stream.
func newEventView(io *cli.IO, lines bool) *eventView {
	return &eventView{io: io, lines: lines, bars: map[string]*progressbar.ProgressBar{}}
}

// on renders e; libraries call it from several goroutines.
func (v *eventView) on(e progress.Event) {
	if e.Event == progress.ToolLog {
		v.io.Logf("  | %s", e.Message)
		return
	}
	if v.json(e) {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	switch e.Event {
	case progress.Start:
		if e.Step != "" {
			v.io.Logf("• %s…", e.Step)
		} else if e.Repo != "" {
			v.files.Add(e)
			v.bars[""] = v.io.Bar(e.Total, fmt.Sprintf("%s (%d files)", e.Repo, e.Files))
		}
	case progress.FileStart, progress.Progress, progress.FileDone:
		if e.Step == "" { // a download: one bar over all its files
			if done, _, _ := v.files.Add(e); v.bars[""] != nil {
				v.bars[""].Set64(done)
			}
			return
		}
		b := v.bars[e.Step]
		if b == nil {
			total := e.Total
			if total <= 0 {
				total = -1 // unknown
			}
			b = v.io.Bar(total, e.Step)
			v.bars[e.Step] = b
		}
		if e.Total > 0 && e.Total != b.GetMax64() {
			b.ChangeMax64(e.Total)
		}
		b.Set64(e.Done)
	case progress.Skip:
		v.finishBar(e.Step)
		v.io.Logf("• %s: skipped (%s)", e.Step, e.Reason)
	case progress.Done:
		v.finishBar(e.Step)
		if e.Step != "" {
			v.io.Logf("• %s: done in %s", e.Step, time.Duration(e.DurationMS)*time.Millisecond)
		}
	case progress.Finding:
		f := e.Finding
		line := "  " + f.Severity + " " + f.Code + ": " + f.Message
		if f.Fix != "" {
			line += " (fix: " + f.Fix + ")"
		}
		v.io.Logf("%s", line)
	case progress.Error:
		v.finishBar(e.Step) // root.go prints the error itself
	case progress.Retry:
		v.io.Logf("retrying %s in %.1fs (try %d failed: %s)", e.File, float64(e.DelayMS)/1000, e.Attempt, e.Message)
	case progress.Warning:
		v.io.Logf("warning: %s", e.Message)
	default:
		if e.Message != "" {
			v.io.Logf("  %s", e.Message)
		}
	}
}

// json prints e as a JSON line when events are the command's --json
// output, and says whether it did. An error event gets its message and
// exit code from Err here, so no library needs to know exit codes. The
// command's own events (push start/done, pull oci:// results) come here
// too.
func (v *eventView) json(e progress.Event) bool {
	if !v.io.JSON || !v.lines {
		return false
	}
	if e.Err != nil {
		e.Error, e.ExitCode = e.Err.Error(), exitCode(e.Err)
	}
	v.io.Event(e)
	return true
}

// finishBar takes step's bar off the terminal.
func (v *eventView) finishBar(step string) {
	if b := v.bars[step]; b != nil {
		b.Finish()
		delete(v.bars, step)
	}
}

// finish takes every bar off the terminal; call it when the command's
// library work is over.
func (v *eventView) finish() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for step := range v.bars {
		v.finishBar(step)
	}
}
