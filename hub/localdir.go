package hub

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/edgectl/edgectl/internal/atomicfile"
)

// materialize copies the snapshot's files into dir as real files, as
// `huggingface-cli download --local-dir` lays them out, including its
// .cache/huggingface/download/<path>.metadata records (commit, etag, time),
// so either tool sees an up-to-date file and skips it next time. Copies go
// through io.Copy between files, which the kernel turns into
// copy_file_range (a reflink on filesystems that support it).
func materialize(ctx context.Context, snap *Snapshot, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(localDirMetaFiles)), 0o755); err != nil {
		return diskErr(err, dir)
	}
	ignore := filepath.Join(dir, filepath.FromSlash(localDirMetaDir), ".gitignore")
	if _, err := os.Stat(ignore); err != nil {
		if err := atomicfile.WriteFile(ignore, []byte("*"), 0o644); err != nil {
			return diskErr(err, ignore)
		}
	}
	// Temporaries a killed earlier pull left beside the files it was
	// copying are removed once per directory (only those whose process is gone).
	swept := map[string]bool{}
	sweep := func(d string) {
		if !swept[d] {
			swept[d] = true
			atomicfile.CleanStale(d)
		}
	}
	for _, f := range snap.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Path))
		meta := filepath.Join(dir, filepath.FromSlash(localDirMetaFiles), filepath.FromSlash(f.Path)+".metadata")
		sweep(filepath.Dir(dst))
		sweep(filepath.Dir(meta))
		if upToDate(dst, meta, f) {
			continue
		}
		if err := atomicfile.Copy(f.Blob, dst, 0o644); err != nil {
			return diskErr(err, dst)
		}
		if err := os.MkdirAll(filepath.Dir(meta), 0o755); err != nil {
			return diskErr(err, meta)
		}
		now := strconv.FormatFloat(float64(time.Now().UnixNano())/1e9, 'f', 6, 64)
		if err := atomicfile.WriteFile(meta, []byte(snap.Commit+"\n"+f.Etag+"\n"+now+"\n"), 0o644); err != nil {
			return diskErr(err, meta)
		}
	}
	return nil
}

// upToDate applies huggingface_hub's rule: the metadata names the same etag
// and the file has not been modified since the metadata was written.
func upToDate(dst, meta string, f FileResult) bool {
	fi, err := os.Stat(dst)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != f.Size || f.Etag == "" {
		return false
	}
	b, err := os.ReadFile(meta)
	if err != nil {
		return false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 3 || strings.TrimSpace(lines[1]) != f.Etag {
		return false
	}
	ts, err := strconv.ParseFloat(strings.TrimSpace(lines[2]), 64)
	if err != nil {
		return false
	}
	return ts > float64(fi.ModTime().UnixNano())/1e9-1
}
