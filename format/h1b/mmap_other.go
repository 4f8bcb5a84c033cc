//go:build !unix

package h1b

import (
	"errors"
	"os"
)

func mmapFile(f *os.File, size int64) ([]byte, error) { return nil, errors.New("mmap unsupported") }
func munmap(b []byte)                                 {}
