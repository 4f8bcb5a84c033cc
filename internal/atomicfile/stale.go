package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	i := strings.LastIndex(name, tempMark)
	if i < 0 || !strings.HasPrefix(name, ".") {
		return 0, false
	}
	rest := name[i+len(tempMark):]
	j := strings.IndexByte(rest, '-')
	if j <= 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(rest[:j])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// CleanStale removes the edgectl temporaries directly in dir whose owner
// process is gone, and returns their paths. Temporaries of live processes
// (another edgectl writing the same directory) are left alone. A PID that
// was reused by an unrelated process only delays the cleanup to a later run.
// A missing dir is not an error.
func CleanStale(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	for _, e := range es {
		pid, ok := IsTemp(e.Name())
		if !ok || pid == os.Getpid() || processAlive(pid) {
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
