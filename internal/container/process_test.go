package container

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

func needShell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH: these tests run a POSIX shell as the child process")
	}
	return sh
}

// A \r\n split across reads is one line end, not a line and an empty one.
func TestLinesSplitsCarriageReturnsAcrossReads(t *testing.T) {
	sc := Lines(iotest.OneByteReader(strings.NewReader("a\r\n 50%|█\r100%|██\r\nb\n\nlast")))
	var got []string
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if want := []string{"a", " 50%|█", "100%|██", "b", "", "last"}; !reflect.DeepEqual(got, want) || sc.Err() != nil {
		t.Errorf("lines %q (%v), want %q", got, sc.Err(), want)
	}
}

func TestStreamMergesOutputAndReportsExit(t *testing.T) {
	sh := needShell(t)
	var got []string
	err := Process{Argv: []string{sh, "-c", `echo out; echo err >&2; printf 'p1\rp2\r\n'; exit 3`}}.Stream(context.Background(), func(l string) { got = append(got, l) })
	if want := []string{"out", "err", "p1", "p2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	if code, cerr := ExitCode(err); code != 3 || cerr != nil {
		t.Errorf("ExitCode(%v) = %d, %v; want 3", err, code, cerr)
	}
	err = Process{Argv: []string{sh, "-c", `kill -9 $$`}}.Stream(context.Background(), func(string) {})
	if code, cerr := ExitCode(err); code != 137 || cerr != nil {
		t.Errorf("killed by SIGKILL: ExitCode(%v) = %d, %v; want 137", err, code, cerr)
	}
	if code, cerr := ExitCode(nil); code != 0 || cerr != nil {
		t.Errorf("ExitCode(nil) = %d, %v", code, cerr)
	}
	other := errors.New("not an exit")
	if _, cerr := ExitCode(other); cerr != other {
		t.Errorf("ExitCode of a non-exit error returned %v", cerr)
	}
}

func TestStreamEnvAndStartError(t *testing.T) {
	sh := needShell(t)
	var got []string
	err := Process{Argv: []string{sh, "-c", `echo "$EDGECTL_CONTAINER_TEST"`}, Env: []string{"EDGECTL_CONTAINER_TEST=x1"}}.Stream(context.Background(), func(l string) { got = append(got, l) })
	if err != nil || len(got) != 1 || got[0] != "x1" {
		t.Errorf("env: %q, %v", got, err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-tool")
	err = Process{Argv: []string{missing}}.Stream(context.Background(), func(string) {})
	var se *StartError
	if !errors.As(err, &se) || se.Program != missing || !strings.HasPrefix(err.Error(), "start "+missing+": ") {
		t.Errorf("a missing program: %v, want a *StartError", err)
	}
}

// alive says whether pid is a process that has not exited (a zombie
// waiting for its reaper counts as gone).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// Past its timeout a native process is stopped with its whole group: the
// worker it forked goes too.
func TestStreamTimeoutStopsTheProcessGroup(t *testing.T) {
	sh := needShell(t)
	pidFile := filepath.Join(t.TempDir(), "worker.pid")
	t0 := time.Now()
	err := Process{Argv: []string{sh, "-c", `sleep 60 & echo $! > "$0"; echo started; wait`, pidFile},
		Timeout: 300 * time.Millisecond, WaitDelay: 5 * time.Second, GroupSignal: syscall.SIGKILL}.Stream(context.Background(), func(string) {})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("stopped after %s", d)
	}
	b, rerr := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if rerr != nil || pid <= 0 {
		t.Fatalf("worker pid: %q, %v", b, rerr)
	}
	for deadline := time.Now().Add(5 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the forked worker %d outlived the timeout", pid)
		}
	}
}

// Cancelling a container run kills the container by name through the
// runtime, then stops the CLI; Stream returns the context's error.
func TestStreamCancelKillsTheContainerByName(t *testing.T) {
	needShell(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	rt := fakeProgram(t, dir, "docker", `echo "$@" >> "`+log+`"
[ "$1" = kill ] && exit 0
echo running
exec sleep 60`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	argv := Run{Runtime: rt, Name: "edgectl-test-1", Image: "img", Command: []string{"tool"}}.Argv()
	t0 := time.Now()
	err := Process{Argv: argv, Runtime: rt, Name: "edgectl-test-1", WaitDelay: 5 * time.Second}.Stream(ctx, func(l string) {
		if l == "running" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("stopped after %s", d)
	}
	b, _ := os.ReadFile(log)
	if calls := strings.Split(strings.TrimSpace(string(b)), "\n"); len(calls) != 2 || calls[0] != "run --rm --name edgectl-test-1 img tool" || calls[1] != "kill edgectl-test-1" {
		t.Errorf("runtime calls %q, want the run then kill by name", calls)
	}
}
