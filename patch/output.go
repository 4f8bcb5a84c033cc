package patch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/internal/atomicfile"
)

// Output receives a patched checkpoint: either a new directory (-o), where
// untouched files are hard-linked (or copied across filesystems) from the
// source, or the source itself (--in-place), where each replaced file's
// original is kept as NAME.orig. Nothing is visible until Commit (for -o),
// and each in-place file is replaced atomically.
type Output struct {
	src     string
	dir     *atomicfile.Dir
	inPlace bool
	written map[string]bool
}

// NewOutput prepares an output for the checkpoint in src. Exactly one of
// out != "" or inPlace must hold.
func NewOutput(src, out string, inPlace bool) (*Output, error) {
	if (out == "") == !inPlace {
		return nil, errors.New("choose one of -o DIR (write a new directory) or --in-place (edit, keeping .orig backups)")
	}
	o := &Output{src: src, inPlace: inPlace, written: map[string]bool{}}
	if inPlace {
		return o, nil
	}
	if abs(out) == abs(src) {
		return nil, fmt.Errorf("-o %s is the input directory: use --in-place to edit it", out)
	}
	d, err := atomicfile.CreateDir(out)
	if err != nil {
		return nil, err
	}
	o.dir = d
	return o, nil
}

func abs(p string) string { a, _ := filepath.Abs(p); return a }

// Write produces the new content of the file name (relative to the
// checkpoint directory) through fill.
func (o *Output) Write(name string, fill func(w *os.File) error) error {
	base := o.src
	if !o.inPlace {
		base = o.dir.Path
	}
	target := filepath.Join(base, name)
	f, err := atomicfile.Create(target, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := fill(f.File); err != nil {
		return err
	}
	if o.inPlace {
		backup := target + ".orig"
		if _, err := os.Lstat(backup); errors.Is(err, os.ErrNotExist) {
			if err := os.Rename(target, backup); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("keep backup %s: %w", backup, err)
			}
		}
	}
	if err := f.Commit(); err != nil {
		return err
	}
	o.written[name] = true
	return nil
}

// WriteBytes is Write for content already in memory.
func (o *Output) WriteBytes(name string, b []byte) error {
	return o.Write(name, func(w *os.File) error { _, err := w.Write(b); return err })
}

// Commit links every file not rewritten into the new directory and
// publishes it. For --in-place it is a no-op.
func (o *Output) Commit() error {
	if o.inPlace {
		return nil
	}
	err := filepath.WalkDir(o.src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(o.src, path)
		if rel == "." {
			return nil
		}
		dst := filepath.Join(o.dir.Path, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if o.written[rel] {
			return nil
		}
		return linkOrCopy(path, dst)
	})
	if err != nil {
		o.dir.Abort()
		return err
	}
	return o.dir.Commit()
}

// Abort discards a -o output.
func (o *Output) Abort() {
	if o.dir != nil {
		o.dir.Abort()
	}
}

// linkOrCopy materializes src at dst: a hard link to the real file (symlinks,
// as in a Hugging Face cache snapshot, are resolved), or a copy when linking
// is impossible. Hard links are safe because edgectl never writes into an
// existing file: replacements are new inodes renamed into place.
func linkOrCopy(src, dst string) error {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if err := os.Link(real, dst); err == nil {
		return nil
	}
	in, err := os.Open(real)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(dst, st.Mode().Perm())
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := io.Copy(f.File, in); err != nil {
		return err
	}
	return f.Commit()
}
