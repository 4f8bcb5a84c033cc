package patch

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/pathguard"
)

// Output receives a patched checkpoint: either a new directory (-o), where
// untouched files are hard-linked (or copied across filesystems) from the
// source, or the source itself (--in-place), where each replaced file's
// original is kept as NAME.orig. Nothing is visible until Commit: -o
// publishes the directory with one rename; --in-place stages every file
// beside its original and switches them under a journal (see inplace.go),
// so a kill at any instant leaves a checkpoint the next run finishes.
type Output struct {
	src     string
	dir     *atomicfile.Dir
	txn     *inPlace
	written map[string]bool
}

// NewOutput prepares an output for the checkpoint in src. Exactly one of
// out != "" or inPlace must hold. An -o directory must not be, contain or
// lie inside src (*pathguard.Error); orphaned temporaries of a killed run
// writing the same -o are removed first. In place, an interrupted earlier
// patch of src is finished first (Resume).
func NewOutput(src, out string, inPlace bool) (*Output, error) {
	if (out == "") == !inPlace {
		return nil, errors.New("choose one of -o DIR (write a new directory) or --in-place (edit, keeping .orig backups)")
	}
	o := &Output{src: src, written: map[string]bool{}}
	if inPlace {
		t, err := beginInPlace(src)
		if err != nil {
			return nil, err
		}
		o.txn = t
		return o, nil
	}
	if err := pathguard.Dir(out, src); err != nil {
		return nil, err
	}
	if err := CheckPending(src); err != nil {
		return nil, err
	}
	if _, err := atomicfile.CleanStale(filepath.Dir(filepath.Clean(out)), filepath.Base(filepath.Clean(out))); err != nil {
		return nil, err
	}
	d, err := atomicfile.CreateDir(out)
	if err != nil {
		return nil, err
	}
	o.dir = d
	return o, nil
}

// Write produces the new content of the file name (relative to the
// checkpoint directory) through fill. In place, files are switched in the
// order written, except the shard index, which always goes last.
func (o *Output) Write(name string, fill func(w *os.File) error) error {
	if o.txn != nil {
		if err := o.txn.stage(name, fill); err != nil {
			return err
		}
		o.written[name] = true
		return nil
	}
	f, err := atomicfile.Create(filepath.Join(o.dir.Path, name), 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := fill(f.File); err != nil {
		return err
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
// publishes it; in place, it switches the staged files.
func (o *Output) Commit() error {
	if o.txn != nil {
		return o.txn.commit()
	}
	err := filepath.WalkDir(o.src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(o.src, path)
		if rel == "." {
			return nil
		}
		if isOurs(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
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

// Abort discards what was written; after Commit it is a no-op. An
// in-place output whose Commit failed past its commit point is left for
// the next run to finish.
func (o *Output) Abort() {
	if o.dir != nil {
		o.dir.Abort()
	}
	if o.txn != nil {
		o.txn.abort()
	}
}

// isOurs tells edgectl's own working files (temporaries of any command,
// staged files and the journal of an in-place patch): they are not part of
// the checkpoint and never copied into an output.
func isOurs(name string) bool {
	_, tmp := atomicfile.TempOf(name)
	return tmp || name == JournalName || (strings.HasPrefix(name, ".") && strings.HasSuffix(name, stagedSuffix))
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
