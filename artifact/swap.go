package artifact

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/failpoint"
)

// NewTempDir makes an empty directory in parent named as an edgectl
// temporary for base (see atomicfile.TempPattern), mode 0755: a run killed
// while filling it leaves something the next run recognizes and removes.
func NewTempDir(parent, base string) (string, error) {
	tmp, err := os.MkdirTemp(parent, atomicfile.TempPattern(base))
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// TempName is a fresh path in parent named as an edgectl temporary for
// base, for renaming something aside (os.Rename does not replace
// directories, so the name must not exist yet).
func TempName(parent, base string) string {
	pattern := atomicfile.TempPattern(base)
	return filepath.Join(parent, strings.Replace(pattern, "*", strconv.FormatUint(rand.Uint64(), 36), 1))
}

// SwapDir moves the finished directory ready into place at target. A
// directory already at target (a previous artifact the caller decided to
// replace) is exchanged with ready in one rename where the system can
// (Linux), else renamed aside first; either way target is never a mix of
// old and new files, and the old one ends under a temporary name that is
// removed now or, after a kill, by the next run.
func SwapDir(ready, target string) error {
	parent := filepath.Dir(filepath.Clean(target))
	if _, err := os.Lstat(target); err == nil {
		if err := exchange(ready, target); err == nil {
			failpoint.Hit("prep.swap") // crash tests: kill -9 with the old directory not yet removed
			os.RemoveAll(ready)        // now the old directory
			return atomicfile.SyncDir(parent)
		}
		old := TempName(parent, filepath.Base(filepath.Clean(target)))
		if err := os.Rename(target, old); err != nil {
			return err
		}
		failpoint.Hit("prep.swap")
		defer os.RemoveAll(old)
	}
	if err := os.Rename(ready, target); err != nil {
		return err
	}
	return atomicfile.SyncDir(parent)
}
