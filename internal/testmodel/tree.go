package testmodel

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// ReadTree maps every file under dir (slash-separated relative paths) to
// its bytes, for tests that compare whole output directories; it fails t
// when dir cannot be read.
func ReadTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatalf("read the tree %s: %v", dir, err)
	}
	return m
}

// TreeDigests is ReadTree with each file's sha256 in place of its bytes,
// for tests that compare a tree before and after a run.
func TreeDigests(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for name, b := range ReadTree(t, dir) {
		out[name] = sha256.Sum256(b)
	}
	return out
}
