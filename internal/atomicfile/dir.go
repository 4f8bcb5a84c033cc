package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/internal/errkind"
)

// Dir is a directory being built next to its final path. Commit renames it
// into place; the target must not exist (edgectl never merges into or
// replaces an output directory it did not create in the same call).
type Dir struct {
	Path   string // temporary directory to write into
	target string
	done   bool
}

// CreateDir starts building a directory that will appear at target.
func CreateDir(target string) (*Dir, error) {
	target = filepath.Clean(target)
	if st, err := os.Lstat(target); err == nil {
		if !st.IsDir() && !st.Mode().IsRegular() {
			// never "remove it": -o /dev/null names the system's device
			return nil, errkind.Errorf(errkind.Usage, "%s is %s: this command writes a new directory there; choose a path that does not exist", target, describe(st.Mode()))
		}
		return nil, fmt.Errorf("%s already exists: choose another -o or remove it", target)
	}
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, TempPattern(filepath.Base(target)))
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &Dir{Path: tmp, target: target}, nil
}

// Commit publishes the directory.
func (d *Dir) Commit() error {
	if d.done {
		return fmt.Errorf("atomicfile: directory %s already committed or aborted", d.target)
	}
	d.done = true
	if err := SyncDir(d.Path); err != nil {
		os.RemoveAll(d.Path)
		return err
	}
	if err := os.Rename(d.Path, d.target); err != nil {
		os.RemoveAll(d.Path)
		return err
	}
	return SyncDir(filepath.Dir(d.target))
}

// Abort removes everything written so far.
func (d *Dir) Abort() {
	if d.done {
		return
	}
	d.done = true
	os.RemoveAll(d.Path)
}
