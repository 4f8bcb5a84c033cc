//go:build !(linux || darwin || freebsd)

package hub

import "context"

// lockFile is a no-op where flock does not exist; concurrent writers of one
// blob are then not serialized.
func lockFile(ctx context.Context, path string, onWait func()) (func(), error) { return func() {}, nil }

// freeBytes is unknown off Unix: the preflight check is skipped.
func freeBytes(dir string) (int64, bool) { return 0, false }
