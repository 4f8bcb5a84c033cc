package cpu

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// memAvailable is what the kernel reports as available without swapping
// (MemAvailable), lowered to the room left under this process's cgroup v2
// memory limit when there is one (containers): the bound a full KV cache
// must stay within. 0 when unknown.
func memAvailable() int64 {
	avail := meminfoAvailable("/proc/meminfo")
	if lim, ok := cgroupRoom("/sys/fs/cgroup"); ok && (avail == 0 || lim < avail) {
		avail = lim
	}
	return avail
}

func meminfoAvailable(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fs[1], 10, 64)
			if err != nil || kb < 0 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupRoom is memory.max − memory.current of the cgroup v2 root the
// process sees (its own, inside a container); ok is false without a limit.
func cgroupRoom(dir string) (int64, bool) {
	read := func(name string) (int64, bool) {
		b, err := os.ReadFile(dir + "/" + name)
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		return v, err == nil && v >= 0
	}
	limit, ok := read("memory.max") // "max" when unlimited: not a number
	if !ok {
		return 0, false
	}
	used, _ := read("memory.current")
	return max(limit-used, 1), true
}
