package safetensors

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/edgectl/edgectl/internal/mmapfile"
)

// File is an open, validated safetensors file. Tensor bytes are read through
// section readers or an mmapped view; nothing is loaded eagerly.
type File struct {
	Path string
	*Header
	mf     *mmapfile.File
	f      *os.File // mf's descriptor, for section readers and kernel copies
	seekMu sync.Mutex
}

// Open opens and validates path.
func Open(path string) (*File, error) {
	mf, err := mmapfile.Open(path, "a .safetensors file")
	if err != nil {
		return nil, err
	}
	h, err := ReadHeader(mf, mf.Size(), path)
	if err != nil {
		mf.Close()
		return nil, err
	}
	return &File{Path: path, Header: h, mf: mf, f: mf.File}, nil
}

// Size is the file's length in bytes.
func (f *File) Size() int64 { return f.mf.Size() }

// OSFile exposes the underlying file for zero-copy transfers.
func (f *File) OSFile() *os.File { return f.f }

// Reader returns a reader over the stored bytes of t.
func (f *File) Reader(t Tensor) *io.SectionReader {
	return io.NewSectionReader(f.f, f.DataStart()+t.Begin, t.Size())
}

// Bytes returns the stored bytes of t as a read-only mmapped view (or a
// buffered copy where mmap is not available). The view is valid until Close.
func (f *File) Bytes(t Tensor) ([]byte, error) {
	return f.mf.Slice(f.DataStart()+t.Begin, t.Size())
}

// Float32 decodes a float tensor (F32, F16, BF16, F64) into a new slice.
func (f *File) Float32(t Tensor) ([]float32, error) {
	b, err := f.Bytes(t)
	if err != nil {
		return nil, err
	}
	out := make([]float32, t.Elements())
	if err := DecodeFloat32(out, t.DType, b); err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", f.Path, t.Name, err)
	}
	return out, nil
}

// Close releases the file and any mapping.
func (f *File) Close() error { return f.mf.Close() }

// CopyTensor returns a Source.WriteTo that copies t's stored bytes. Copies
// from one file to another go through copy_file_range (the kernel moves the
// bytes; user memory stays flat), which is why this seeks the shared file
// descriptor instead of using a SectionReader: os.File only takes that fast
// path for an io.LimitedReader over an *os.File. Calls are serialized.
func (f *File) CopyTensor(t Tensor) func(io.Writer) error {
	return func(w io.Writer) error {
		f.seekMu.Lock()
		defer f.seekMu.Unlock()
		if _, err := f.f.Seek(f.DataStart()+t.Begin, io.SeekStart); err != nil {
			return err
		}
		return FromReader(f.f, t.Size())(w)
	}
}

// Release tells the kernel the mapped pages of t are no longer needed, so a
// pass over a checkpoint larger than RAM keeps its resident set flat. The
// view stays valid: touching t again reads it back from the file.
func (f *File) Release(t Tensor) { f.mf.Release(f.DataStart()+t.Begin, t.Size()) }

// ReleaseRange is Release for bytes [off, off+n) of t's data.
func (f *File) ReleaseRange(t Tensor, off, n int64) { f.mf.Release(f.DataStart()+t.Begin+off, n) }
