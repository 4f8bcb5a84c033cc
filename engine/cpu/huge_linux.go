package cpu

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages (THP is often "madvise" only).
func adviseHuge(b []byte) { unix.Madvise(b, unix.MADV_HUGEPAGE) }

// adviseSmall keeps b out of transparent huge pages (THP may be "always").
func adviseSmall(b []byte) { unix.Madvise(b, unix.MADV_NOHUGEPAGE) }
