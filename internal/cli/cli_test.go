package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestJSONModeKeepsStdoutMachineReadable(t *testing.T) {
	var out, errOut bytes.Buffer
	io := &IO{Out: &out, ErrOut: &errOut, JSON: true}
	io.Settle()
	io.Printf("human text\n")
	io.Logf("a log line")
	io.Event(map[string]any{"event": "done"})
	if out.String() != "{\"event\":\"done\"}\n" || !strings.Contains(errOut.String(), "a log line") {
		t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
	}
	if io.Interactive || io.ColorOut(Red, "x") != "x" || io.ColorErr(Red, "x") != "x" {
		t.Fatal("a buffer is not a terminal: no colour, no progress")
	}
	var q bytes.Buffer
	quiet := &IO{Out: &out, ErrOut: &q, Quiet: true}
	quiet.Logf("hidden")
	if q.Len() != 0 {
		t.Fatal("--quiet printed a log line")
	}
	bar := io.Bar(100, "x")
	bar.Add(50)
	if strings.Contains(errOut.String(), "50") {
		t.Fatal("progress drawn on a non-terminal")
	}
}
