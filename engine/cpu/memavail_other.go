//go:build !linux

package cpu

// memAvailable is unknown here: the default context is bounded by
// maxContext only.
func memAvailable() int64 { return 0 }
