package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/internal/errkind"
)

// Output is a file a user named with -o: the one way every command that
// writes a single output file opens it, so `-o /dev/null`, `-o fifo`,
// `-o link` and `-o -` behave the same everywhere. The rules
// (docs/output-paths.md):
//
//   - a regular file or a missing path: a temporary beside it, fsync,
//     rename (Create);
//   - a symlink: the same at the file it resolves to; the link stays;
//   - a character device or a FIFO (also through a symlink, as
//     /dev/stdout is): the bytes are streamed into it, opened for writing
//     and never replaced — no temporary, no rename;
//   - "-": streamed to stdout;
//   - a directory, a socket or a block device: refused (usage error).
//
// A streamed output cannot be taken back: Abort after a partial write
// leaves what was written with the reader.
type Output struct {
	Path   string // as the user named it
	Target string // where the bytes go: Path, the file a symlink resolves to, or "stdout"
	// Streaming is true when bytes go straight into a device, FIFO or
	// stdout: there is nothing to rename and no sidecar file beside it.
	Streaming bool

	w    io.Writer
	file *File    // the atomic write (regular targets)
	dev  *os.File // the opened device or FIFO (streams other than stdout)
	n    int64
	done bool
}

// CreateOutput opens path for writing by the rules above. stdout is what
// "-" writes to (os.Stdout when nil).
func CreateOutput(path string, perm os.FileMode, stdout io.Writer) (*Output, error) {
	if path == "-" {
		if stdout == nil {
			stdout = os.Stdout
		}
		return &Output{Path: path, Target: "stdout", Streaming: true, w: stdout}, nil
	}
	target, st, err := checkOutput(path)
	if err != nil {
		return nil, err
	}
	o := &Output{Path: path, Target: target}
	if st == nil || st.Mode().IsRegular() {
		f, err := Create(target, perm)
		if err != nil {
			return nil, fmt.Errorf("-o %s: %w", path, err)
		}
		o.file, o.w = f, f
		return o, nil
	}
	// A character device or a FIFO. O_WRONLY without O_CREATE or O_TRUNC:
	// the node is used, never made or replaced. A FIFO's open waits for
	// its reader, as cat's does.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("-o %s: %w", path, err)
	}
	o.dev, o.w, o.Streaming = f, f, true
	return o, nil
}

// CheckOutput refuses, before any work, an -o that CreateOutput would
// refuse (a directory, a socket, a block device, an unresolvable link).
func CheckOutput(path string) error {
	if path == "-" {
		return nil
	}
	_, _, err := checkOutput(path)
	return err
}

// checkOutput resolves path and refuses what cannot take a file's bytes;
// st is nil for a path that does not exist yet.
func checkOutput(path string) (target string, st os.FileInfo, err error) {
	target, st, err = resolveOutput(path)
	if err != nil || st == nil {
		return target, st, err
	}
	switch m := st.Mode(); {
	case m.IsRegular(), m&os.ModeCharDevice != 0, m&os.ModeNamedPipe != 0:
		return target, st, nil
	case m.IsDir():
		return "", nil, errkind.Errorf(errkind.Usage, "-o %s is a directory: this command writes one file; name a file, e.g. %s", path, filepath.Join(path, "model.out"))
	case m&os.ModeSocket != 0:
		return "", nil, errkind.Errorf(errkind.Usage, "-o %s is a socket, which cannot be opened as a file; name a file, a FIFO or - (stdout)", path)
	case m&os.ModeDevice != 0:
		return "", nil, errkind.Errorf(errkind.Usage, "-o %s is a block device: edgectl will not write a model over a disk; name a file", path)
	default:
		return "", nil, errkind.Errorf(errkind.Usage, "-o %s is %s; name a file", path, describe(m))
	}
}

// resolveOutput returns where the bytes for path go and what is there now
// (nil when nothing is). A symlink is followed to the file it resolves to,
// also when that file does not exist yet (a dangling link gets its target
// created); devices and FIFOs reached through links are opened by the
// given path, which the kernel follows (/dev/stdout → /proc/self/fd/1 →
// "pipe:[…]" is not a path one can rename at).
func resolveOutput(path string) (string, os.FileInfo, error) {
	lst, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("-o %s: %w", path, err)
	}
	if lst.Mode()&os.ModeSymlink == 0 {
		return path, lst, nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.Mode().IsRegular():
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", nil, fmt.Errorf("-o %s: cannot resolve the symlink: %w", path, err)
		}
		return real, st, nil
	case err == nil:
		return path, st, nil
	case errors.Is(err, os.ErrNotExist):
		real, err := danglingTarget(path)
		if err != nil {
			return "", nil, err
		}
		return real, nil, nil
	}
	return "", nil, fmt.Errorf("-o %s: %w", path, err)
}

// danglingTarget follows a chain of symlinks whose last target does not
// exist and returns that missing path.
func danglingTarget(path string) (string, error) {
	p := path
	for range 40 { // the kernel's own limit on links in a path
		dest, err := os.Readlink(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrInvalid) {
				return p, nil // reached the missing end (or a non-link)
			}
			return "", fmt.Errorf("-o %s: %w", path, err)
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = dest
	}
	return "", errkind.Errorf(errkind.Usage, "-o %s: too many levels of symbolic links", path)
}

// Write writes to the output, counting bytes.
func (o *Output) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	o.n += int64(n)
	return n, err
}

// Written is the number of bytes written so far (the output's size once
// committed: a device's or pipe's Stat cannot say it).
func (o *Output) Written() int64 { return o.n }

// Commit publishes a file output (fsync, rename, fsync of its directory)
// or closes a stream.
func (o *Output) Commit() error {
	if o.done {
		return errors.New("atomicfile: output already committed or aborted")
	}
	o.done = true
	switch {
	case o.file != nil:
		return o.file.Commit()
	case o.dev != nil:
		if err := o.dev.Close(); err != nil {
			return fmt.Errorf("-o %s: %w", o.Path, err)
		}
	}
	return nil
}

// Abort discards a file output's temporary, or closes a stream (what a
// stream's reader has already read stays read). Safe after Commit.
func (o *Output) Abort() {
	if o.done {
		return
	}
	o.done = true
	switch {
	case o.file != nil:
		o.file.Abort()
	case o.dev != nil:
		o.dev.Close()
	}
}

// IsStream reports whether CreateOutput would stream into path ("-", a
// character device or a FIFO, also through a symlink) rather than write a
// file: a command then writes no sidecar beside it and cleans no
// temporaries there.
func IsStream(path string) bool {
	if path == "-" {
		return true
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode()&(os.ModeCharDevice|os.ModeNamedPipe) != 0
}
