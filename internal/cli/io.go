package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
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
	// bars and colour: not CI, not TERM=dumb, not --quiet or --json.
	Interactive bool

	mu sync.Mutex
}

// System returns an IO over the process's standard streams.
func System() *IO {
	return &IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// Settle computes Interactive after flags are parsed.
func (o *IO) Settle() {
	f, ok := o.ErrOut.(*os.File)
	o.Interactive = ok && term.IsTerminal(int(f.Fd())) &&
		os.Getenv("CI") == "" && os.Getenv("TERM") != "dumb" && os.Getenv("NO_COLOR") == "" &&
		!o.Quiet && !o.JSON
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
