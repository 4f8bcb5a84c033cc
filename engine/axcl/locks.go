package axcl

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// cleanLocks removes the runtime's stale lock files: what the seed's
// operators did by hand (`rm /tmp/axcl/*` after a hang, axera.md §13; a
// third-party report, the vendor documents no lock files). It runs only
// when no runtime of ours is left, and still keeps a file that some
// process has open or holds an flock on, so a runtime started outside
// edgectl keeps its locks. Only regular files at the top level are
// considered. It returns the paths removed.
func cleanLocks(dir string, logf func(string, ...any)) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // no lock directory: nothing stale
	}
	open := openFilesUnder(dir)
	var removed []string
	for _, ent := range entries {
		path := filepath.Join(dir, ent.Name())
		if !ent.Type().IsRegular() || open[path] || flocked(path) {
			continue
		}
		if err := os.Remove(path); err != nil {
			logf("axcl: warning: stale lock file %s: %v (remove it by hand)", path, err)
			continue
		}
		removed = append(removed, path)
	}
	if len(removed) > 0 {
		logf("axcl: removed %d stale lock file(s) from %s", len(removed), dir)
	}
	return removed
}

// flocked reports whether another process holds an flock on path.
func flocked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// openFilesUnder lists the files under dir that a process this user can
// see has open (/proc/*/fd); other users' processes are not readable.
func openFilesUnder(dir string) map[string]bool {
	open := map[string]bool{}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return open
	}
	self := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil || p.Name() == self {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && filepath.Dir(target) == dir {
				open[target] = true
			}
		}
	}
	return open
}
