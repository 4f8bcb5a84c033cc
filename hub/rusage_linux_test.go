package hub

import "syscall"

// maxRSSMiB is the process's peak resident set (Linux reports KiB).
func maxRSSMiB() (float64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return float64(ru.Maxrss) / 1024, true
}
