//go:build !unix

package cpu

func allocAnon(n int) ([]byte, bool)   { return make([]byte, n), false }
func reserveAnon(n int) ([]byte, bool) { return make([]byte, n), false }
func freeAnon([]byte)                  {}
func releaseMapped([]byte)             {}
