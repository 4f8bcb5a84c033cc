package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Copy writes a copy of the file src (symlinks followed, as in a Hugging
// Face snapshot) at dst with the given permissions, as WriteFile does:
// temporary file, fsync, rename, directory fsync, so dst is never a
// prefix. Missing parent directories of dst are created (0755): every
// caller copies into a tree it is building. The bytes move with io.Copy
// between two *os.File, which the kernel serves with copy_file_range (a
// reflink where the filesystem shares extents), not through user memory.
func Copy(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := Create(dst, perm)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := io.Copy(out.File, in); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Commit()
}
