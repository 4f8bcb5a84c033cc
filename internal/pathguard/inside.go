package pathguard

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Inside checks that path lies strictly inside root as the kernel reaches
// it: with every symlink on the way to path's parent resolved, the parent
// is root or below it. path itself is not resolved (a symlink there is the
// link, which is what deleting it would remove), so a command that deletes
// path never reaches outside root through a linked directory or a ".."
// element. rm uses it before deleting a model found in a models directory.
func Inside(root, path string) error {
	rootR, err := filepath.EvalSymlinks(absOr(root))
	if err != nil {
		return err
	}
	a := absOr(path)
	parent, err := filepath.EvalSymlinks(filepath.Dir(a))
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(rootR, filepath.Join(parent, filepath.Base(a)))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%s is not inside %s once symlinks are resolved (it is %s)", path, root, filepath.Join(parent, filepath.Base(a)))
	}
	return nil
}
