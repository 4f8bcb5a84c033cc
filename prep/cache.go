package prep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/envconfig"
	"github.com/edgectl/edgectl/internal/failpoint"
)

// Cache holds finished steps, each in steps/<key>/ (its output files under
// out/, its record in step.json), written as a whole with atomicfile.Dir:
// an entry exists completely or not at all, so a run killed at any moment
// leaves only finished steps behind (and temporary directories that the
// next run sweeps).
type Cache struct {
	Dir string
}

// stepRecordFile is the record of a finished step inside its entry.
const stepRecordFile = "step.json"

// cachedStep is what step.json holds.
type cachedStep struct {
	Step     string               `json:"step"`
	Key      string               `json:"key"`
	Check    bool                 `json:"check,omitempty"` // no output: the next step reads this step's input
	Findings []artifact.Finding   `json:"findings"`
	Files    []artifact.FileEntry `json:"files,omitempty"` // sizes only (digests are computed for OUT/)
}

// staleAfter is how old a temporary entry must be before a run removes it;
// a younger one may belong to a concurrent run still working on it.
const staleAfter = 24 * time.Hour

// DefaultCacheDir is $EDGECTL_CACHE_DIR, else the user cache dir's
// edgectl/prep.
func DefaultCacheDir() string {
	if d := envconfig.CacheDir.Get(); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "edgectl", "prep")
}

// OpenCache creates the cache layout under dir and sweeps stale leftovers
// of killed runs.
func OpenCache(dir string) (*Cache, error) {
	for _, sub := range []string{"steps", "filehash"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, inputErr("cache directory %s: %v (set --cache-dir or EDGECTL_CACHE_DIR to a writable place)", dir, err)
		}
	}
	c := &Cache{Dir: dir}
	// A killed run leaves its half-written step (and an entry it was
	// replacing) under edgectl temporary names: removed as soon as their
	// process is gone. Other dot-names (older edgectl versions) go after a
	// day, when no run can still be writing them.
	for _, sub := range []string{"steps", "filehash"} {
		if _, err := atomicfile.CleanStale(filepath.Join(dir, sub)); err != nil {
			return nil, inputErr("cache directory %s: %v (remove it, or set --cache-dir)", dir, err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "steps"))
	for _, e := range ents {
		if _, tmp := atomicfile.IsTemp(e.Name()); tmp || !strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAfter {
			os.RemoveAll(filepath.Join(dir, "steps", e.Name()))
		}
	}
	return c, nil
}

func (c *Cache) entry(key string) string { return filepath.Join(c.Dir, "steps", key) }

// lookup returns the record of a finished step, or nil. An entry whose
// files no longer match their recorded sizes is treated as absent.
func (c *Cache) lookup(key string) *cachedStep {
	b, err := os.ReadFile(filepath.Join(c.entry(key), stepRecordFile))
	if err != nil {
		return nil
	}
	var rec cachedStep
	if json.Unmarshal(b, &rec) != nil || rec.Key != key {
		return nil
	}
	for _, f := range rec.Files {
		st, err := os.Stat(filepath.Join(c.entry(key), "out", filepath.FromSlash(f.Path)))
		if err != nil || st.Size() != f.Size {
			return nil
		}
	}
	return &rec
}

// stepKeySchema names the key's layout. v2: the options are the canonical
// JSON of the step's options struct (v1 hashed a map built beside the
// step's code); every v1 entry stopped matching once.
const stepKeySchema = "edgectl.prep.step/v2"

// stepKey hashes everything a step's output depends on: its name and
// version, edgectl's version, its options (the exact bytes the manifest
// records) and its input's key.
func stepKey(name string, ver int, edgectl string, opts json.RawMessage, input string) (string, error) {
	b, err := json.Marshal(struct {
		Schema  string          `json:"schema"`
		Step    string          `json:"step"`
		Version int             `json:"version"`
		Edgectl string          `json:"edgectl"`
		Options json.RawMessage `json:"options"`
		Input   string          `json:"input"`
	}{stepKeySchema, name, ver, edgectl, opts, input})
	if err != nil {
		return "", fmt.Errorf("step %s: options are not hashable: %v", name, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// FileSHA256 returns the digest of a source file, remembering it by path,
// size, modification time and inode (as git's index does) so that a rerun
// on a large local checkpoint does not read it again.
func (c *Cache) FileSHA256(path string) (string, int64, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", 0, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", 0, err
	}
	var ino uint64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = uint64(sys.Ino)
	}
	memo := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d\x00%d", abs, st.Size(), st.ModTime().UnixNano(), ino)))
	memoPath := filepath.Join(c.Dir, "filehash", hex.EncodeToString(memo[:]))
	if b, err := os.ReadFile(memoPath); err == nil && len(b) == 64 {
		return string(b), st.Size(), nil
	}
	sum, n, err := artifact.HashFile(abs)
	if err != nil {
		return "", 0, err
	}
	_ = atomicfile.WriteFile(memoPath, []byte(sum), 0o644) // a lost memo only costs a re-hash
	return sum, n, nil
}

// linkOrCopy makes dst hold src's bytes: a hard link when both sit on one
// file system (cache entries are immutable, so sharing inodes is safe),
// else a copy. Symlinks (Hub snapshots) are resolved first.
func linkOrCopy(src, dst string) error {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Link(real, dst); err == nil {
		return nil
	}
	return atomicfile.Copy(real, dst, 0o644)
}

// begin starts writing the entry for key. With replace an existing entry
// is moved aside and removed first.
func (c *Cache) begin(key string, replace bool) (*atomicfile.Dir, error) {
	target := c.entry(key)
	if replace {
		if _, err := os.Lstat(target); err == nil {
			// Renamed aside under a temporary name first, so a kill during
			// the removal leaves something the next run recognizes.
			old := artifact.TempName(filepath.Dir(target), key)
			if err := os.Rename(target, old); err != nil {
				return nil, err
			}
			failpoint.Hit("prep.replace") // crash tests: kill -9 with the old entry set aside
			os.RemoveAll(old)
		}
	}
	return atomicfile.CreateDir(target)
}

// commit publishes a finished entry. When a concurrent run published the
// same key first, its entry stands (same key, same content).
func (c *Cache) commit(d *atomicfile.Dir, key string) error {
	if err := d.Commit(); err != nil {
		if c.lookup(key) != nil {
			return nil
		}
		return err
	}
	return nil
}

var errNoOutput = errors.New("the step wrote no output directory")
