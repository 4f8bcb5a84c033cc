package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

func viewOver(json, quiet, lines bool) (*eventView, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	io := &cli.IO{Out: &out, ErrOut: &errOut, JSON: json, Quiet: quiet}
	io.Settle()
	return newEventView(io, lines), &out, &errOut
}

// A day in a prep run: what each event becomes in each mode.
var sampleEvents = []progress.Event{
	{Event: progress.Start, Step: "quant", Key: "k1"},
	{Event: progress.Progress, Step: "quant", Done: 10, Total: 40, Unit: "bytes"},
	{Event: progress.ToolLog, Step: "pulsar2", Message: "compiling layer 3"},
	{Event: progress.Finding, Step: "doctor", Finding: &progress.FindingRecord{Severity: "fixable", Code: "eos-array", Message: "eos is a list", Fix: "edgectl patch config"}},
	{Event: progress.Error, Step: "check", Err: fmt.Errorf("prep step check: %w", errkind.Errorf(errkind.Blocked, "4 experts"))},
}

// TestEventViewJSONLines: with --json, every event but a tool's log is one
// JSON line on stdout, an error event carries its message and its kind's
// exit code; the tool's log goes to stderr.
func TestEventViewJSONLines(t *testing.T) {
	v, out, errOut := viewOver(true, false, true)
	for _, e := range sampleEvents {
		v.on(e)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(sampleEvents)-1 {
		t.Fatalf("stdout %q: want %d lines", out, len(sampleEvents)-1)
	}
	var last progress.Event
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Event != "error" || last.ExitCode != exitBlocked || last.Error != "prep step check: 4 experts" {
		t.Errorf("error line %s (%v)", lines[len(lines)-1], err)
	}
	if strings.Contains(out.String(), "compiling") || !strings.Contains(errOut.String(), "  | compiling layer 3") {
		t.Errorf("tool log: stdout %q stderr %q", out, errOut)
	}
}

// TestEventViewForPeople: without --json the events are log lines on
// stderr (an error is left to root.go), nothing on stdout; --quiet leaves
// stderr empty; a command whose --json output is one document keeps
// events off stdout.
func TestEventViewForPeople(t *testing.T) {
	v, out, errOut := viewOver(false, false, true)
	for _, e := range sampleEvents {
		v.on(e)
	}
	v.finish()
	want := "• quant…\n  | compiling layer 3\n  fixable eos-array: eos is a list (fix: edgectl patch config)\n"
	if out.Len() != 0 || errOut.String() != want {
		t.Errorf("stdout %q\nstderr %q\nwant   %q", out, errOut, want)
	}

	v, out, errOut = viewOver(false, true, true)
	for _, e := range sampleEvents {
		v.on(e)
	}
	if out.Len() != 0 || errOut.Len() != 0 {
		t.Errorf("--quiet: stdout %q stderr %q", out, errOut)
	}

	v, out, _ = viewOver(true, false, false)
	for _, e := range sampleEvents {
		v.on(e)
	}
	if out.Len() != 0 {
		t.Errorf("a one-document command got events on stdout: %q", out)
	}
}
