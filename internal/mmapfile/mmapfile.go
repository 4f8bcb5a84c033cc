// Package mmapfile opens a weight file for reading through a lazily created,
// read-only memory mapping. The format readers (safetensors, GGUF, .h1b)
// parse headers through ReaderAt and hand out zero-copy views of tensor data
// with Slice; Release drops pages a pass no longer needs, so streaming over a
// file larger than RAM keeps the resident set flat. Where mmap is not
// available, Slice falls back to reading into a new buffer.
package mmapfile

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// File is an open read-only file with an optional mapping.
type File struct {
	*os.File
	size int64

	once   sync.Once
	mapped []byte
	mapErr error
}

// Open opens path for reading; what names the expected kind in the error
// for a directory ("a .gguf file").
func Open(path, what string) (*File, error) {
	// O_NONBLOCK: a FIFO (say, a hostile shard index entry) opens at once
	// instead of waiting forever for a writer, and is refused below.
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a directory, not %s", path, what)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %s, not a regular file: %s must be a regular file or a symlink to one (replace it with the real file)", path, special(st.Mode()), what)
	}
	return &File{File: f, size: st.Size()}, nil
}

func special(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// Size is the file length in bytes.
func (f *File) Size() int64 { return f.size }

// Slice returns bytes [off, off+n) as a read-only view valid until Close
// (or a copy where mapping failed). Callers validate ranges beforehand.
func (f *File) Slice(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > f.size {
		return nil, fmt.Errorf("%s: bytes [%d, %d) are outside the %d-byte file", f.Name(), off, off+n, f.size)
	}
	f.once.Do(func() { f.mapped, f.mapErr = mmap(f.File, f.size) })
	if f.mapErr != nil {
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return nil, err
		}
		return buf, nil
	}
	return f.mapped[off : off+n : off+n], nil
}

// Release tells the kernel the mapped pages of [off, off+n) are not needed
// for now; touching them again reads them back from the file.
func (f *File) Release(off, n int64) {
	if f.mapped == nil {
		return
	}
	page := int64(pageSize)
	start := (off + page - 1) / page * page // only whole pages inside the range
	end := (off + n) / page * page
	if end > start {
		dontNeed(f.mapped[start:end])
	}
}

// Close unmaps and closes the file.
func (f *File) Close() error {
	if f.mapped != nil {
		munmap(f.mapped)
		f.mapped = nil
	}
	return f.File.Close()
}
