package progress

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWireFormat: an Event's JSON is the --json line docs/pull.md and
// docs/prep.md show; unused fields and Err stay out.
func TestWireFormat(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want string
	}{
		{Event{Event: Start, Repo: "acme/tiny", Revision: "main", Commit: "c0", Total: 1048598, Files: 2},
			`{"event":"start","repo":"acme/tiny","revision":"main","commit":"c0","total":1048598,"files":2}`},
		{Event{Event: Progress, Repo: "acme/tiny", File: "model.safetensors", Bytes: 524288, Total: 1048581},
			`{"event":"progress","repo":"acme/tiny","file":"model.safetensors","bytes":524288,"total":1048581}`},
		{Event{Event: FileStart, Repo: "acme/tiny", File: "m", Total: 9, ResumedFrom: 4},
			`{"event":"file_start","repo":"acme/tiny","file":"m","total":9,"resumed_from":4}`},
		{Event{Event: Progress, Step: "quant", Done: 10, Total: 40, Unit: "bytes"},
			`{"event":"progress","step":"quant","done":10,"total":40,"unit":"bytes"}`},
		{Event{Event: Finding, Step: "doctor", Finding: &FindingRecord{Severity: "fixable", Code: "eos-array", Message: "m", Fix: "f"}},
			`{"event":"finding","step":"doctor","finding":{"severity":"fixable","code":"eos-array","message":"m","fix":"f"}}`},
		{Event{Event: Error, Step: "check", Err: errors.New("bad"), Error: "bad", ExitCode: 4},
			`{"event":"error","step":"check","error":"bad","exit_code":4}`},
	} {
		b, err := json.Marshal(c.e)
		if err != nil || string(b) != c.want {
			t.Errorf("got %s (%v)\nwant %s", b, err, c.want)
		}
	}
}

type recorder struct {
	mu  sync.Mutex
	evs []Event
}

func (r *recorder) on(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
}

// TestEveryLimitsProgressPerStep: within one interval a step's progress
// passes once, plus the event that reaches the total; other steps and
// other events are not held back.
func TestEveryLimitsProgressPerStep(t *testing.T) {
	var r recorder
	f := Every(time.Hour, r.on)
	for i := int64(1); i <= 100; i++ {
		f(Event{Event: Progress, Step: "quant", Done: i, Total: 100})
		f(Event{Event: Progress, Step: "pull", Done: i, Total: 200})
	}
	f(Event{Event: Warning, Message: "w"})
	if len(r.evs) != 4 || r.evs[0].Done != 1 || r.evs[1].Done != 1 || r.evs[2].Done != 100 || r.evs[2].Step != "quant" || r.evs[3].Event != Warning {
		t.Errorf("passed %d events: %+v", len(r.evs), r.evs)
	}
	if Every(time.Second, nil) != nil {
		t.Error("Every(d, nil) is not nil")
	}
	var nilFunc Func
	nilFunc.Emit(Event{Event: Done}) // must not panic
}

// TestWriterCountsACopy: a copy through Writer reports its bytes so far,
// ending at the total.
func TestWriterCountsACopy(t *testing.T) {
	var r recorder
	w := Writer(r.on, "embedding", 10000)
	if _, err := io.Copy(io.MultiWriter(io.Discard, w), io.LimitReader(strings.NewReader(strings.Repeat("x", 10000)), 10000)); err != nil {
		t.Fatal(err)
	}
	last := r.evs[len(r.evs)-1]
	if last.Event != Progress || last.Step != "embedding" || last.Done != 10000 || last.Total != 10000 || last.Unit != "bytes" {
		t.Errorf("last event %+v", last)
	}
	if Writer(nil, "x", 1) != nil {
		t.Error("Writer(nil, …) is not nil")
	}
}

// TestFileSumAddsFiles: per-file byte counts (which repeat and grow) sum
// to one figure for the download.
func TestFileSumAddsFiles(t *testing.T) {
	var s FileSum
	s.Add(Event{Event: Start, Total: 300})
	s.Add(Event{Event: FileStart, File: "a", Bytes: 50}) // resumed at 50
	s.Add(Event{Event: Progress, File: "b", Bytes: 100})
	s.Add(Event{Event: Progress, File: "a", Bytes: 120})
	done, total, moved := s.Add(Event{Event: FileDone, File: "a", Bytes: 200})
	if done != 300 || total != 300 || !moved {
		t.Errorf("sum %d of %d (moved %v), want 300 of 300", done, total, moved)
	}
	if _, _, moved := s.Add(Event{Event: Retry, File: "b"}); moved {
		t.Error("a retry moved the sum")
	}
}
