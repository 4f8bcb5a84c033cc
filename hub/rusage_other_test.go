//go:build !linux

package hub

// maxRSSMiB is not measured off Linux (units differ per system).
func maxRSSMiB() (float64, bool) { return 0, false }
