//go:build unix

package mmapfile

import (
	"os"

	"golang.org/x/sys/unix"
)

var pageSize = unix.Getpagesize()

func mmap(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return []byte{}, nil
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func dontNeed(b []byte) { unix.Madvise(b, unix.MADV_DONTNEED) }

func munmap(b []byte) {
	if len(b) > 0 {
		unix.Munmap(b)
	}
}

// openFlags keeps open(2) from blocking on a FIFO.
const openFlags = unix.O_NONBLOCK
