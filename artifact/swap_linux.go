package artifact

import "golang.org/x/sys/unix"

// exchange swaps two directory entries atomically (renameat2
// RENAME_EXCHANGE): no instant without a target directory.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
