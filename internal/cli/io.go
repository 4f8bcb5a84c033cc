// Package cli holds what every edgectl command shares: the machine/human
// output split (--json, --quiet), colour, and progress bars that appear
// only on a terminal. Exit codes are cmd/edgectl's (exitcode.go); library
// packages never import cli.
package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/edgectl/edgectl/internal/envconfig"
)

// IO is where a command reads and writes. With --json, stdout carries only
// machine output (one JSON document, or JSON lines for event streams) and
// everything for people goes to stderr. Tests build an IO over buffers.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	JSON  bool // machine output on Out
	Quiet bool // no logs, no progress

	// Interactive is true when ErrOut is a terminal that can show progress
	// bars: not CI, not TERM=dumb, not --quiet or --json. NO_COLOR does not
	// change it: it asks for no colour, not for no progress.
	Interactive bool

	// colorOut and colorErr say whether that stream takes colour: each is
	// decided on its own stream, so `edgectl doctor DIR | less` gets plain
	// text on stdout even though stderr is still a terminal.
	colorOut, colorErr bool

	mu sync.Mutex
}

// System returns an IO over the process's standard streams.
func System() *IO {
	return &IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// Settle decides, after flags are parsed, what each stream can show:
// progress bars on stderr (Interactive) and colour on stdout and stderr,
// each only where that stream is a terminal. NO_COLOR (any value) turns
// colour off everywhere; TERM=dumb turns off colour and progress; CI turns
// off progress.
func (o *IO) Settle() {
	dumb := envconfig.Term.Get() == "dumb"
	colour := !envconfig.NoColor.IsSet() && !dumb
	errTTY := isTerminal(o.ErrOut)
	o.Interactive = errTTY && !envconfig.CI.IsSet() && !dumb && !o.Quiet && !o.JSON
	o.colorErr = errTTY && colour && !o.Quiet
	o.colorOut = isTerminal(o.Out) && colour && !o.JSON
}

// isTerminal says w is a file on a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Logf prints a line for people on stderr unless --quiet.
func (o *IO) Logf(format string, args ...any) {
	if o.Quiet {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.ErrOut, format+"\n", args...)
}

// Printf writes human output on stdout (only when not in --json mode).
func (o *IO) Printf(format string, args ...any) {
	if o.JSON {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.Out, format, args...)
}

// WriteJSON writes v as one indented JSON document on stdout.
func (o *IO) WriteJSON(v any) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	enc := json.NewEncoder(o.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Event writes v as one compact JSON line on stdout: the --json form of
// long-running commands (progress, findings, step results).
func (o *IO) Event(v any) {
	if !o.JSON {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	o.Out.Write(append(b, '\n'))
}

// Bar returns a byte-progress bar on stderr, or a bar that draws nothing
// when the session is not interactive. It is an io.Writer, so
// io.MultiWriter(dst, bar) tracks a copy. total < 0 means unknown.
func (o *IO) Bar(total int64, desc string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(o.ErrOut),
		progressbar.OptionSetVisibility(o.Interactive),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100_000_000), // 100ms
		progressbar.OptionClearOnFinish(),
		progressbar.OptionOnCompletion(func() { fmt.Fprint(o.ErrOut, "\r") }),
	)
}
