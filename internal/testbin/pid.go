package testbin

import (
	"os/exec"
	"testing"
)

// DeadPID is the id of a process that has exited and been reaped: the
// owner a test gives a temporary or a record whose process was killed. It
// skips t where true(1) cannot run.
func DeadPID(t testing.TB) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skip("no true(1) to leave a dead process id:", err)
	}
	return c.ProcessState.Pid()
}
