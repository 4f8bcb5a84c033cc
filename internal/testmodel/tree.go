package testmodel

import (
	"io/fs"
	"os"
	"path/filepath"
)

// ReadTree maps every file under dir (slash-separated relative paths) to
// its bytes, for tests that compare whole output directories.
func ReadTree(dir string) (map[string][]byte, error) {
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
	return m, err
}
