// Package modelfile opens the files a model directory holds or names
// (shards listed in an index, config.json, tokenizer files, sidecars) so
// that a hostile checkpoint can neither point a reader outside the model
// directory nor make it block: names must be local paths, and only regular
// files (or symlinks to one, as in the Hugging Face cache, whose snapshot
// entries link into ../../blobs/) are read. Opens never block on a FIFO or
// a device, and whole-file reads are capped before anything is allocated.
package modelfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular is wrapped by errors for a FIFO, device, socket or
// directory where a model file was expected.
var ErrNotRegular = errors.New("not a regular file")

// ErrNotLocal is wrapped by Join's error for a name that is absolute or
// leaves the directory.
var ErrNotLocal = errors.New("not a path inside the model directory")

// ErrTooLarge is wrapped by ReadFile's error for a file over its limit.
var ErrTooLarge = errors.New("over the size limit")

// Error is a file Open or ReadFile refuses: Path, what is wrong with it
// (Msg, without the path) and how to fix it. It wraps ErrNotRegular or
// ErrTooLarge so callers can re-word it in their own error types.
type Error struct {
	Path, Msg, Fix string
	Kind           error
}

func (e *Error) Error() string { return e.Path + " " + e.Msg + " (" + e.Fix + ")" }
func (e *Error) Unwrap() error { return e.Kind }

// Join returns dir/name when name is a local path: relative, not empty,
// and not climbing out with "..". Symlinks are followed later, at open
// time, and only to regular files.
func Join(dir, name string) (string, error) {
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		return "", fmt.Errorf("%q is %w %s", name, ErrNotLocal, dir)
	}
	return filepath.Join(dir, filepath.FromSlash(name)), nil
}

// Describe names a file mode for an error message ("a named pipe (FIFO)").
func Describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}

// Open opens path for reading without ever blocking (O_NONBLOCK where the
// platform has it, so a FIFO opens at once) and then refuses anything that
// is not a regular file, checked on the opened descriptor so nothing can
// be swapped in between.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &Error{Path: path, Kind: ErrNotRegular, Msg: "is " + Describe(st.Mode()) + ", not a regular file",
			Fix: "model files must be regular files or symlinks to one: replace it with the real file"}
	}
	return f, st, nil
}

// ReadFile reads a whole regular file of at most limit bytes; what names
// the kind of file in the error ("a tokenizer.json"). A missing file is
// reported as os.ReadFile would (errors.Is(err, fs.ErrNotExist)).
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, &Error{Path: path, Kind: ErrTooLarge, Msg: fmt.Sprintf("is %d bytes, over the %d-byte limit for %s", st.Size(), limit, what),
			Fix: "it is corrupt or not " + what + ": restore the original file"}
	}
	// Read at most limit+1 bytes: the size may change under us.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, &Error{Path: path, Kind: ErrTooLarge, Msg: fmt.Sprintf("grew past the %d-byte limit for %s while being read", limit, what),
			Fix: "something is writing to it: wait for it to finish"}
	}
	return b, nil
}
