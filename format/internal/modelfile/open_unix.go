//go:build unix

package modelfile

import "syscall"

// openFlags makes open(2) return at once on a FIFO with no writer instead
// of waiting for one; reads of regular files ignore the flag.
const openFlags = syscall.O_NONBLOCK
