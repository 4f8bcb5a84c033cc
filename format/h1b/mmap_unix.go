//go:build unix

package h1b

import (
	"os"
	"syscall"
)

func mmapFile(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return []byte{}, nil
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

func munmap(b []byte) {
	if len(b) > 0 {
		syscall.Munmap(b)
	}
}
