package rknnrt

import "syscall"

// procAttr puts the helper in its own process group (signalled as one)
// and has the kernel kill it when the server dies: a helper stuck in the
// NPU driver would otherwise keep its cores and memory after a crash.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
