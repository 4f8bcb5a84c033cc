package cli

import (
	"os"
	"testing"

	"github.com/creack/pty"
)

// terminal returns the terminal end of a real pseudo-terminal.
func terminal(t *testing.T) *os.File {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { tty.Close(); master.Close() })
	return tty
}

// pipe returns the write end of a real pipe: a file that is not a terminal.
func pipe(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return w
}

func colours(o *IO) (out, err bool) {
	return o.ColorOut(Red, "x") != "x", o.ColorErr(Red, "x") != "x"
}

// TestColourIsDecidedPerStream: each stream is coloured only when it is a
// terminal itself; stdout piped while stderr is a terminal gets plain text
// (doctor once coloured a pipe because stderr was a terminal).
func TestColourIsDecidedPerStream(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("CI", "")
	cases := []struct {
		name             string
		out, errOut      *os.File
		wantOut, wantErr bool
		wantProgress     bool
		json, quiet      bool
	}{
		{name: "both terminals", out: terminal(t), errOut: terminal(t), wantOut: true, wantErr: true, wantProgress: true},
		{name: "stdout piped", out: pipe(t), errOut: terminal(t), wantErr: true, wantProgress: true},
		{name: "stderr piped", out: terminal(t), errOut: pipe(t), wantOut: true},
		{name: "both piped", out: pipe(t), errOut: pipe(t)},
		{name: "--json", out: terminal(t), errOut: terminal(t), json: true, wantErr: true},
		{name: "--quiet", out: terminal(t), errOut: terminal(t), quiet: true, wantOut: true},
	}
	for _, c := range cases {
		o := &IO{Out: c.out, ErrOut: c.errOut, JSON: c.json, Quiet: c.quiet}
		o.Settle()
		out, errc := colours(o)
		if out != c.wantOut || errc != c.wantErr || o.Interactive != c.wantProgress {
			t.Errorf("%s: colour on stdout %v stderr %v, progress %v; want %v %v %v",
				c.name, out, errc, o.Interactive, c.wantOut, c.wantErr, c.wantProgress)
		}
	}
}

// TestNoColorIsForColourOnly: NO_COLOR turns colour off on both streams but
// leaves progress bars; TERM=dumb turns off both; CI only progress.
func TestNoColorIsForColourOnly(t *testing.T) {
	t.Setenv("TERM", "xterm")
	t.Setenv("CI", "")
	t.Setenv("NO_COLOR", "1")
	o := &IO{Out: terminal(t), ErrOut: terminal(t)}
	o.Settle()
	if out, errc := colours(o); out || errc || !o.Interactive {
		t.Errorf("NO_COLOR=1: colour stdout %v stderr %v, progress %v; want false false true", out, errc, o.Interactive)
	}

	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	o.Settle()
	if out, errc := colours(o); out || errc || o.Interactive {
		t.Errorf("TERM=dumb: colour stdout %v stderr %v, progress %v; want all false", out, errc, o.Interactive)
	}

	t.Setenv("TERM", "xterm")
	t.Setenv("CI", "true")
	o.Settle()
	if out, errc := colours(o); !out || !errc || o.Interactive {
		t.Errorf("CI=true: colour stdout %v stderr %v, progress %v; want true true false", out, errc, o.Interactive)
	}
}
