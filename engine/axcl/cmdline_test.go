package axcl

import (
	"os/exec"
	"slices"
	"testing"
)

// A PID record written right after Start holds the runtime's real command
// line, never the empty one /proc shows while the exec lays out the new
// program's arguments; a record with that would not match the runtime
// again, and Recover would leave it holding the card.
func TestExecCmdlineRightAfterStart(t *testing.T) {
	empty := 0
	for range 100 {
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Skip("no sleep(1):", err)
		}
		if cl, err := procCmdline(c.Process.Pid); err == nil && cl[0] == "" {
			empty++ // the window execCmdline waits out
		}
		got := execCmdline(c.Process.Pid)
		c.Process.Kill()
		c.Wait()
		if !slices.Equal(got, []string{"sleep", "30"}) {
			t.Fatalf("execCmdline right after Start: %q", got)
		}
	}
	t.Logf("/proc showed an empty command line right after Start in %d of 100 starts", empty)
}
