//go:build !linux

package rknnrt

import "syscall"

// procAttr puts the helper in its own process group (signalled as one).
// Only Linux (the board) can tie its life to the server's.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
