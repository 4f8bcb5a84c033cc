// Package atomicfile writes files so that a reader sees either the old
// content or the complete new content, never a prefix: data goes to a
// temporary file in the same directory, is fsynced, then renamed over the
// target, and the directory is fsynced so the rename survives a crash.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File is a pending write. Call Commit to publish it or Abort to discard it;
// Abort after Commit is a no-op, so `defer f.Abort()` is always safe.
type File struct {
	*os.File
	path string
	done bool
}

// Create starts a write to path with the given permissions. A path that
// exists must be a regular file or a symlink (which the rename replaces,
// leaving what it pointed to alone, as a Hugging Face snapshot needs):
// renaming over a device, FIFO, socket or directory would swap a file in
// for something that is not one (`-o /dev/null` must not replace the
// device node).
func Create(path string, perm os.FileMode) (*File, error) {
	if err := replaceable(path); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, TempPattern(base))
	if err != nil {
		return nil, err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return &File{File: tmp, path: path}, nil
}

// replaceable refuses a target that is not a regular file or a symlink.
func replaceable(path string) error {
	st, err := os.Lstat(path)
	if err != nil || st.Mode().IsRegular() || st.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	return fmt.Errorf("%s is %s: edgectl writes its outputs as regular files and will not replace it; choose a file path", path, describe(st.Mode()))
}

// describe names what a file mode is, for messages.
func describe(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symlink"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// Commit flushes the data to disk and renames it into place.
func (f *File) Commit() error {
	if f.done {
		return errors.New("atomicfile: already committed or aborted")
	}
	f.done = true
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		os.Remove(f.File.Name())
		return fmt.Errorf("sync %s: %w", f.path, err)
	}
	if err := f.File.Close(); err != nil {
		os.Remove(f.File.Name())
		return fmt.Errorf("close %s: %w", f.path, err)
	}
	if err := os.Rename(f.File.Name(), f.path); err != nil {
		os.Remove(f.File.Name())
		return err
	}
	return SyncDir(filepath.Dir(f.path))
}

// Abort discards the pending write.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.File.Name())
}

// WriteFile is os.WriteFile made atomic.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// SyncDir fsyncs a directory so renames and creations in it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
