package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// tempMark is in the name of every temporary file or directory edgectl
// writes: ".NAME.edgectl-tmp-PID-RANDOM". The PID says which process owns
// it, so a later run can tell a write still in progress from one whose
// process was killed (kill -9, power loss) and remove only the latter.
const tempMark = ".edgectl-tmp-"

// TempPattern is the os.CreateTemp / os.MkdirTemp pattern for a temporary
// sibling of the file or directory named base, owned by this process.
func TempPattern(base string) string {
	return "." + base + tempMark + strconv.Itoa(os.Getpid()) + "-*"
}

// IsTemp reports whether name (a base name) is an edgectl temporary, and
// the PID of the process that made it.
func IsTemp(name string) (pid int, ok bool) {
	_, pid, ok = parseTemp(name)
	return pid, ok
}

// TempOf reports whether name is an edgectl temporary and, if so, the base
// name of the file or directory it was going to become.
func TempOf(name string) (base string, ok bool) {
	base, _, ok = parseTemp(name)
	return base, ok
}

func parseTemp(name string) (base string, pid int, ok bool) {
	i := strings.LastIndex(name, tempMark)
	if i < 1 || !strings.HasPrefix(name, ".") {
		return "", 0, false
	}
	rest := name[i+len(tempMark):]
	j := strings.IndexByte(rest, '-')
	if j <= 0 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(rest[:j])
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	return name[1:i], pid, true
}

// started is about when this process began; a temporary with our PID
// older than that was left by an earlier process that had the same PID.
var started = time.Now()

// OwnerAlive reports whether the process pid still runs (an edgectl
// temporary or lock of that PID may still be in use). On platforms where
// this cannot be told it says true, so nothing in use is ever removed.
func OwnerAlive(pid int) bool {
	return pid == os.Getpid() || processAlive(pid)
}

// CleanStale removes the edgectl temporaries directly in dir whose owner
// process is gone, and returns their paths. With names, only temporaries of
// those outputs (base names, e.g. "model.gguf") are considered: a command
// cleans up after its own killed runs and leaves other commands' files to
// them. Temporaries of live processes (another edgectl writing the same
// directory) are left alone. A PID that was reused by an unrelated process
// only delays the cleanup to a later run. A missing dir is not an error.
//
// Callers: run it before writing an output, on the output's directory:
//
//	atomicfile.CleanStale(filepath.Dir(out), filepath.Base(out))
func CleanStale(dir string, names ...string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	for _, e := range es {
		base, pid, ok := parseTemp(e.Name())
		if !ok || (len(names) > 0 && !slices.Contains(names, base)) {
			continue
		}
		if pid == os.Getpid() {
			// Ours, or a previous process's with the same PID (a
			// container's PID 1 run again): that one predates us.
			info, err := e.Info()
			if err != nil || !info.ModTime().Before(started) {
				continue
			}
		} else if processAlive(pid) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(p); err != nil {
			return removed, fmt.Errorf("remove stale temporary %s: %w", p, err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}
