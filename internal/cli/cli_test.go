package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type coded struct{}

func (coded) Error() string { return "gated" }
func (coded) ExitCode() int { return ExitAuth }

func TestCodeOf(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("plain"), ExitError},
		{Exit(ExitTool, errors.New("docker died")), ExitTool},
		{fmt.Errorf("pull: %w", coded{}), ExitAuth},
		{fmt.Errorf("wrapped: %w", Usagef("bad flag")), ExitUsage},
	}
	for _, c := range cases {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if Exit(ExitTool, nil) != nil {
		t.Fatal("Exit(code, nil) is not nil")
	}
}

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

func TestUnits(t *testing.T) {
	if Bytes(1536) != "1.5 KiB" || Bytes(3<<30) != "3.0 GiB" || Bytes(7) != "7 B" || Count(656000) != "656.0K" || Count(2_410_000_000) != "2.41B" {
		t.Fatal(Bytes(1536), Bytes(3<<30), Count(656000), Count(2_410_000_000))
	}
}
