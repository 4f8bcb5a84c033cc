package atomicfile

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/internal/failpoint"
)

// Remove deletes path (a file, or a directory and everything in it) so
// that nobody ever sees it half removed: it is first renamed, in one step,
// to an edgectl temporary in dir (path's own directory when dir is ""; it
// must be on the same file system), that directory is synced, and only then
// is the temporary deleted. A kill -9 midway leaves only the temporary,
// which CleanStale removes on a later run (Remove sweeps the earlier
// leftovers of the same name itself). A symlink is removed, never followed.
// A missing path is an error (fs.ErrNotExist).
func Remove(path, dir string) error {
	path = filepath.Clean(path)
	if dir == "" {
		dir = filepath.Dir(path)
	}
	base := filepath.Base(path)
	CleanStale(dir, base) // best effort: only leftovers of dead processes
	if _, err := os.Lstat(path); err != nil {
		return err
	}
	tmp := filepath.Join(dir, strings.Replace(TempPattern(base), "*", strconv.FormatUint(rand.Uint64(), 36), 1))
	if err := os.Rename(path, tmp); err != nil {
		return err
	}
	if err := SyncDir(dir); err != nil {
		return err
	}
	if d := filepath.Dir(path); d != dir {
		SyncDir(d) // the name is gone from here too
	}
	failpoint.Hit("rm.aside") // crash tests: kill -9 with the tree renamed, not yet deleted
	return os.RemoveAll(tmp)
}
