package cpu

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks for transparent huge pages (THP is often "madvise" only).
func adviseHuge(b []byte) { unix.Madvise(b, unix.MADV_HUGEPAGE) }

// adviseSmall keeps b out of transparent huge pages (THP may be "always").
func adviseSmall(b []byte) { unix.Madvise(b, unix.MADV_NOHUGEPAGE) }

// populate commits the whole pages inside b now, in one call, instead
// of one page fault at a time (MADV_POPULATE_WRITE, Linux 5.14+; older
// kernels refuse it and the pages fault in as before).
func populate(b []byte) {
	const pg = 4096
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (pg - p%pg) % pg
	if uintptr(len(b)) <= lo {
		return
	}
	n := (uintptr(len(b)) - lo) / pg * pg
	if n > 0 {
		unix.Madvise(b[lo:lo+n], unix.MADV_POPULATE_WRITE)
	}
}
