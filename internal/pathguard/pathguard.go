// Package pathguard keeps a command's outputs from destroying its inputs.
// Paths are compared as the kernel sees them, not as strings: both sides
// are resolved (symlinks, "..", a directory reached through a symlinked
// alias) and files are matched with os.SameFile, which also catches hard
// links and bind mounts.
//
// The rule, one home for every command that writes:
//   - a file output must not be the same file as any file the command
//     reads (File). A new name inside the model directory is allowed —
//     `quant pack DIR -o DIR/model.gguf` — as llama.cpp's convert allows
//     it: nothing that is read is replaced.
//   - a directory output must not be, contain, or lie inside an input
//     directory, nor contain an input file (Dir).
package pathguard

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/internal/errkind"
)

// Error is an output that would replace or nest with an input. It is a
// usage error (errkind.Usage): the arguments are wrong.
type Error struct {
	Flag   string // how the output was given ("-o"), or "" for a positional argument
	Output string // the output as the user named it
	Input  string // the input it collides with
	Reason string // "it is the input file", "it lies inside the input directory", …
	Detail string // "same file", "a hard link", … ("" when the reason says it all)
}

func (e *Error) Error() string {
	out := e.Output
	if e.Flag != "" {
		out = e.Flag + " " + out
	}
	what := e.Reason + " " + e.Input
	if e.Detail != "" {
		what += " (" + e.Detail + ")"
	}
	return fmt.Sprintf("refusing to write %s: %s; choose a path outside the input", out, what)
}

// Unwrap marks the error as a usage error: the output argument is wrong.
func (e *Error) Unwrap() error { return errkind.Usage }

// File checks a file the command will create or replace against every
// file or directory it reads. Inputs that do not exist are skipped; an
// output that does not exist yet aliases nothing.
func File(out string, inputs ...string) error {
	ost, err := os.Stat(out) // follows symlinks: a link to an input is the input
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		ist, err := os.Stat(in)
		if err != nil || !os.SameFile(ost, ist) {
			continue
		}
		e := &Error{Flag: "-o", Output: out, Input: in, Reason: "it is the input file"}
		switch {
		case ist.IsDir():
			e.Reason = "it is the input directory"
		case sameResolved(out, in):
			e.Detail = "same file"
			if lst, err := os.Lstat(out); err == nil && lst.Mode()&os.ModeSymlink != 0 {
				e.Detail = "same file, through a symlink"
			} else if filepath.Clean(absOr(out)) != filepath.Clean(absOr(in)) {
				e.Detail = "same file, through a symlinked directory"
			}
		default:
			e.Detail = "a hard link to it: both names share the data"
		}
		return e
	}
	return nil
}

// Dir checks a directory output (created, or written into) against the
// directories and files the command reads: the output must not be,
// contain or lie inside an input directory, and must not contain an input
// file.
func Dir(out string, inputs ...string) error {
	rout := resolve(out)
	ost, outErr := os.Stat(rout)
	for _, in := range inputs {
		ist, err := os.Stat(in)
		if err != nil {
			continue
		}
		if ist.IsDir() {
			// Walk up from the output: an ancestor that is the input
			// directory (by inode, so bind mounts count) means inside.
			for a := rout; ; a = filepath.Dir(a) {
				if st, err := os.Stat(a); err == nil && os.SameFile(st, ist) {
					e := &Error{Flag: "-o", Output: out, Input: in, Reason: "it lies inside the input directory"}
					if a == rout {
						e.Reason = "it is the input directory"
					}
					return e
				}
				if filepath.Dir(a) == a {
					break
				}
			}
		}
		if outErr != nil || !ost.IsDir() {
			continue
		}
		// Walk up from the input: the output as an ancestor contains it.
		rin := resolve(in)
		for a := filepath.Dir(rin); ; a = filepath.Dir(a) {
			if st, err := os.Stat(a); err == nil && os.SameFile(st, ost) {
				return &Error{Flag: "-o", Output: out, Input: in, Reason: "it contains the input"}
			}
			if filepath.Dir(a) == a {
				break
			}
		}
	}
	return nil
}

// resolve returns the absolute path p will have once created: the longest
// existing prefix with its symlinks resolved, then the rest as written.
func resolve(p string) string {
	a := absOr(p)
	if r, err := filepath.EvalSymlinks(a); err == nil {
		return r
	}
	parent := filepath.Dir(a)
	if parent == a {
		return a
	}
	return filepath.Join(resolve(parent), filepath.Base(a))
}

func sameResolved(a, b string) bool { return resolve(a) == resolve(b) }

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
