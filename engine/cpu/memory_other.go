//go:build !unix

package cpu

import "fmt"

func allocAnon(n int) ([]byte, bool) { return make([]byte, n), false }
func reserveAnon(n int) ([]byte, bool, error) {
	if n > maxUnmappedReserve {
		return nil, false, fmt.Errorf("%d bytes is more than this platform reserves without a mapping (%d)", n, maxUnmappedReserve)
	}
	return make([]byte, n), false, nil
}
func freeAnon([]byte)      {}
func releaseMapped([]byte) {}
