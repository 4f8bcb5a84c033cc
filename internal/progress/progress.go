// Package progress is the one shape in which a library tells the command
// layer what a long operation is doing: a Hub download, a prep step, a
// quant pack, a pulsar2 build, an OCI push or pull. Libraries call a Func
// with Events; cmd/edgectl renders them in one place (bars on a terminal,
// JSON lines with --json, nothing with --quiet or in CI). An Event's JSON
// form is the --json line, so its field names are part of edgectl's
// output contract (docs/pull.md, docs/prep.md, docs/quant.md).
package progress

import (
	"io"
	"sync"
	"time"
)

// Event names. Each command documents the ones it emits.
const (
	Start     = "start"      // a step (Step) or a download (Repo, Files, Total) begins
	Progress  = "progress"   // Step: Done of Total (0: unknown) Unit; a download's File: Bytes of Total
	Done      = "done"       // a step or command finished
	Skip      = "skip"       // a step was not needed (Reason)
	Finding   = "finding"    // something a step noticed or changed (Finding)
	Error     = "error"      // a step failed (Err)
	Log       = "log"        // a line for people (Message)
	Warning   = "warning"    // something the user should know (Message)
	Retry     = "retry"      // a download waits (DelayMS) before try Attempt+1
	FileStart = "file_start" // a download of File begins (ResumedFrom: bytes already there)
	FileDone  = "file_done"  // File is complete (Cached: nothing was downloaded)
	Result    = "result"     // a command's final summary
	// ToolLog is one line of an external tool's own log (a compiler):
	// people see it on stderr; it never goes to --json stdout, where
	// compiler logs would drown the events.
	ToolLog = "tool_log"
)

// Interval is how often a library reports the progress of one step or
// file: often enough for a bar to move, rarely enough for a CI log.
const Interval = 250 * time.Millisecond

// Event is one thing that happened. One struct for every event keeps the
// wire format in one place; unused fields are left out of the JSON.
type Event struct {
	Event string `json:"event"`
	Step  string `json:"step,omitempty"`
	Key   string `json:"key,omitempty"` // a prep step's cache key

	// downloads
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	File     string `json:"file,omitempty"`

	Reason string `json:"reason,omitempty"` // skip

	Done  int64  `json:"done,omitempty"`  // a step's progress, in Unit
	Bytes int64  `json:"bytes,omitempty"` // a download's file bytes so far; a result's size
	Total int64  `json:"total,omitempty"` // of Done or Bytes (0: unknown)
	Unit  string `json:"unit,omitempty"`

	Files       int   `json:"files,omitempty"`
	Cached      bool  `json:"cached,omitempty"`
	ResumedFrom int64 `json:"resumed_from,omitempty"`
	Attempt     int   `json:"attempt,omitempty"`
	DelayMS     int64 `json:"delay_ms,omitempty"`

	Finding *FindingRecord `json:"finding,omitempty"`

	// done, skip: timings live here and in the log, never in an artifact
	DurationMS int64 `json:"duration_ms,omitempty"`

	// error: a library sets Err; the command layer fills Error and
	// ExitCode from it (exit codes are the command layer's table).
	Err      error  `json:"-"`
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`

	// results
	Out            string `json:"out,omitempty"`
	ManifestSHA256 string `json:"manifest_sha256,omitempty"`
	Ref            string `json:"ref,omitempty"`
	Digest         string `json:"digest,omitempty"`

	Message string `json:"message,omitempty"`
}

// FindingRecord is a finding as events carry it; artifact.Finding, the
// manifest's record, converts to it field for field.
type FindingRecord struct {
	Severity string `json:"severity"` // info, fixed, warning, fixable, blocking, fatal
	Code     string `json:"code"`
	Message  string `json:"message"`
	Evidence string `json:"evidence,omitempty"`
	Fix      string `json:"fix,omitempty"`
}

// Func receives events. Libraries may call it from several goroutines.
type Func func(Event)

// Emit calls f with e; a nil Func discards it.
func (f Func) Emit(e Event) {
	if f != nil {
		f(e)
	}
}

// Every returns a Func that passes Progress events of each step (and file)
// to f at most once per d, and always the one that reaches Total; every
// other event passes at once. It keeps --json streams and CI logs small
// while bars still move. A nil f stays nil.
func Every(d time.Duration, f Func) Func {
	if f == nil {
		return nil
	}
	var mu sync.Mutex
	last := map[[2]string]time.Time{}
	return func(e Event) {
		if e.Event == Progress && e.Done != e.Total {
			k := [2]string{e.Step, e.File}
			now := time.Now()
			mu.Lock()
			if now.Sub(last[k]) < d {
				mu.Unlock()
				return
			}
			last[k] = now
			mu.Unlock()
		}
		f(e)
	}
}

// Writer returns an io.Writer that counts what passes through it and
// reports it as step's Progress towards total bytes (a copy that writes
// through io.MultiWriter(dst, w)). A nil f gives a nil Writer.
func Writer(f Func, step string, total int64) io.Writer {
	if f == nil {
		return nil
	}
	return &counter{f: f, step: step, total: total}
}

type counter struct {
	f     Func
	step  string
	total int64
	mu    sync.Mutex
	n     int64
}

func (c *counter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.n += int64(len(p))
	n := c.n
	c.mu.Unlock()
	c.f(Event{Event: Progress, Step: c.step, Done: n, Total: c.total, Unit: "bytes"})
	return len(p), nil
}

// FileSum adds up a download's per-file events (FileStart, Progress and
// FileDone carry one file's bytes so far, from several goroutines) into
// one figure for all its files; the Start event gives the total.
type FileSum struct {
	mu    sync.Mutex
	files map[string]int64
	sum   int64
	total int64
}

// Add takes e into the sum and reports whether it moved the figure, and
// the bytes so far of the total.
func (s *FileSum) Add(e Event) (done, total int64, moved bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Event {
	case Start:
		s.total = e.Total
	case FileStart, Progress, FileDone:
		if s.files == nil {
			s.files = map[string]int64{}
		}
		s.sum += e.Bytes - s.files[e.File]
		s.files[e.File] = e.Bytes
		return s.sum, s.total, true
	}
	return s.sum, s.total, false
}
