//go:build !unix

package modelfile

// openFlags: platforms without FIFOs in the file system need nothing.
const openFlags = 0
