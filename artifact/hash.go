package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// HashFile returns the sha256 (hex) and size of the file at path.
func HashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// ListFiles returns every regular file under dir (following a symlinked
// file, as the Hub cache's snapshots are), as sorted slash paths.
func ListFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if d.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(path)
			if err != nil {
				return fmt.Errorf("%s: broken symlink: %w", path, err)
			}
			if st.IsDir() {
				return fmt.Errorf("%s: symlink to a directory is not supported", path)
			}
			if !st.Mode().IsRegular() {
				return nil // a FIFO or device would block or never end: not model data
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(out)
	return out, err
}

// HashTree lists dir's files with their sizes and digests, skipping the
// names in skip (top-level only).
func HashTree(dir string, skip ...string) ([]FileEntry, error) {
	names, err := ListFiles(dir)
	if err != nil {
		return nil, err
	}
	files := make([]FileEntry, 0, len(names))
	for _, n := range names {
		if slices.Contains(skip, n) {
			continue
		}
		sum, size, err := HashFile(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil {
			return nil, err
		}
		files = append(files, FileEntry{Path: n, Size: size, SHA256: sum})
	}
	return files, nil
}

// TreeDigest is one sha256 over a file list: paths, sizes and digests.
func TreeDigest(files []FileEntry) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", f.Path, f.Size, f.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}
