//go:build !unix

package safetensors

import (
	"errors"
	"os"
)

func mmapFile(f *os.File, size int64) ([]byte, error) { return nil, errors.New("mmap unsupported") }
func munmap(b []byte)                                 {}

const pageSize = 4096

func madviseDontNeed(b []byte) {}
