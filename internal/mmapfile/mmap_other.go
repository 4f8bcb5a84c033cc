//go:build !unix

package mmapfile

import (
	"errors"
	"os"
)

const pageSize = 4096

func mmap(f *os.File, size int64) ([]byte, error) { return nil, errors.New("mmap unsupported") }
func dontNeed(b []byte)                           {}
func munmap(b []byte)                             {}

const openFlags = 0
