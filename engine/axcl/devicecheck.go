package axcl

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// Leftovers is what Recover would act on, found without acting: doctor
// reports it and a person decides. Nothing is signalled or removed.
type Leftovers struct {
	StateDir string // where the lane keeps its PID files
	LockDir  string // where the runtime keeps its lock files
	// Orphans are runtimes whose edgectl server is gone (PIDs): the next
	// start of the lane ends them.
	Orphans []int
	// Live are runtimes of an edgectl server that still runs (PIDs).
	Live []int
	// StalePIDFiles name processes that have ended or whose PID now
	// belongs to another program: the next start removes the files.
	StalePIDFiles []string
	// StaleLocks are lock files no process holds or has open. Recover
	// cleans them only when no runtime of a running server is left, so
	// the list is empty while Live is not.
	StaleLocks []string
	// Leak is Recover's CMM-in-use report ("" if none), checked only when
	// no runtime of ours runs (their CMM is no leak).
	Leak string
}

// FindLeftovers inspects the lane's PID files, the runtime's lock files
// and, with no runtime of ours left, the card's CMM, as Recover would, but
// read-only. A lockDir other than "" replaces Options.LockDir (doctor
// checks a board root given on its command line).
func (e *Engine) FindLeftovers(ctx context.Context, lockDirOverride string) Leftovers {
	o := e.opts
	if lockDirOverride != "" {
		o.LockDir = lockDirOverride
	}
	l := Leftovers{StateDir: stateDir(o), LockDir: lockDir(o)}
	entries, _ := os.ReadDir(l.StateDir) // none yet: nothing left over
	for _, ent := range entries {
		if !strings.HasSuffix(ent.Name(), ".json") {
			continue
		}
		path := filepath.Join(l.StateDir, ent.Name())
		b, err := os.ReadFile(path)
		var rec pidRecord
		switch {
		case err != nil || json.Unmarshal(b, &rec) != nil || rec.PID <= 0 || !rec.sameProcess():
			l.StalePIDFiles = append(l.StalePIDFiles, path)
		case rec.ownerAlive():
			l.Live = append(l.Live, rec.PID)
		default:
			l.Orphans = append(l.Orphans, rec.PID)
		}
	}
	if len(l.Live) == 0 {
		l.StaleLocks = staleLocks(l.LockDir)
		if len(l.Orphans) == 0 {
			l.Leak = cmmLeak(ctx, o)
		}
	}
	return l
}

// staleLocks lists the lock files cleanLocks would remove.
func staleLocks(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	open := openFilesUnder(dir)
	var stale []string
	for _, ent := range entries {
		path := filepath.Join(dir, ent.Name())
		if ent.Type().IsRegular() && !open[path] && !flocked(path) {
			stale = append(stale, path)
		}
	}
	return stale
}
