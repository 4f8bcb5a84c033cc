package failpoint

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"syscall"
	"testing"
)

func TestParse(t *testing.T) {
	got := parse(" patch.rename:2, quant.tensor ,bad:x,zero:0,")
	want := map[string]int{"patch.rename": 2, "quant.tensor": 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parse = %v, want %v", got, want)
	}
	if parse("") != nil {
		t.Fatal("an empty spec arms something")
	}
}

// The armed hit kills the process with SIGKILL; earlier hits and other
// names pass. The test re-runs its own binary as the victim.
func TestHitKillsOnTheArmedHit(t *testing.T) {
	if os.Getenv("FAILPOINT_VICTIM") == "1" {
		Hit("a")
		Hit("b")
		os.Stdout.WriteString("after first\n")
		Hit("b")
		os.Stdout.WriteString("survived\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHitKillsOnTheArmedHit$")
	cmd.Env = append(os.Environ(), "FAILPOINT_VICTIM=1", Env+"=b:2")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("victim did not die: %v, %q", err, out)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if ok && (!ws.Signaled() || ws.Signal() != syscall.SIGKILL) {
		t.Fatalf("victim ended with %v, want SIGKILL", ws)
	}
	if string(out) != "after first\n" {
		t.Fatalf("victim wrote %q", out)
	}
}
