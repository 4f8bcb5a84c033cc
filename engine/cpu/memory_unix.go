//go:build unix

package cpu

import (
	"golang.org/x/sys/unix"
	"unsafe"
)

const hugePage = 2 << 20

// allocAnon maps n bytes of anonymous memory, asking for transparent huge
// pages (fewer TLB misses when a decode step streams a gigabyte).
func allocAnon(n int) (b []byte, mapped bool) {
	size := (n + hugePage - 1) / hugePage * hugePage
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]byte, n), false
	}
	adviseHuge(b)
	return b[:n:size], true
}

func freeAnon(b []byte) { unix.Munmap(b[:cap(b)]) }

// reserveAnon maps n bytes of address space for memory that fills up
// gradually (the KV cache): nothing is committed until touched
// (MAP_NORESERVE, so a long context does not count against overcommit).
// It is kept in small pages: the head-major cache touches one page per
// layer and KV head at a time (300 runs on BitNet-2B), and a huge page
// for each would commit 600 MiB for the first token.
//
// Where the mapping fails, a small reservation falls back to Go memory; a
// large one is an error rather than an allocation that could not be met.
func reserveAnon(n int) (b []byte, mapped bool, err error) {
	const page = 4096
	size := max(page, (n+page-1)/page*page)
	b, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		if n > maxUnmappedReserve {
			return nil, false, err
		}
		return make([]byte, n), false, nil
	}
	adviseSmall(b)
	return b[:n:size], true, nil
}

// releaseMapped drops this process's page-table entries for the whole
// pages inside b (a read-only file mapping we will not read again); the
// data stays in the page cache.
func releaseMapped(b []byte) {
	const pg = 4096
	p := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % pg)
	off := (pg - p) % pg
	if len(b) <= off {
		return
	}
	n := (len(b) - off) / pg * pg
	if n > 0 {
		unix.Madvise(b[off:off+n], unix.MADV_DONTNEED)
	}
}
