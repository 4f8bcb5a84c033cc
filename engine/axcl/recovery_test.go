package axcl

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/testbin"
)

const fakeSMIPkg = "github.com/edgectl/edgectl/engine/axcl/testdata/fakesmi"

// hangupProof wraps the fake runtime in a shell that ignores SIGHUP and
// stays after the runtime's exit: a stand-in for a runtime stuck in its
// teardown (ax-llm#60), which outlives its server. The fake itself exits
// on the PTY's end of input; the shell, the recorded PID, stays behind.
func hangupProof(bin string) []string {
	return []string{"/bin/sh", "-c", `trap '' HUP; "$0" "$@"; sleep 600`, bin, "run", "{dir}"}
}

// TestRecoveryHelperServer is the server the next test kills: it loads a
// model on the lane, prints the runtime's PID and waits to be killed.
func TestRecoveryHelperServer(t *testing.T) {
	bin, dir, state := os.Getenv("RECOVERY_HELPER_BIN"), os.Getenv("RECOVERY_HELPER_DIR"), os.Getenv("RECOVERY_HELPER_STATE")
	if bin == "" {
		t.Skip("run by TestRecoveryEndsLeftoverOfKilledServer")
	}
	e := New(Options{Command: hangupProof(bin), ResetCommand: "/reset", StopTimeout: time.Second,
		SMI: []string{}, StateDir: state, LockDir: filepath.Join(state, "locks")})
	m, err := e.Load(context.Background(), dir, engine.LoadOptions{})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("PID", m.(*Model).PID())
	select {} // until SIGKILL
}

func TestRecoveryEndsLeftoverOfKilledServer(t *testing.T) {
	bin := fakeRuntime(t)
	dir := modelDir(t, `{}`)
	state, locks := t.TempDir(), t.TempDir()
	stale := filepath.Join(locks, "axcl_dev0.lock")
	if err := os.WriteFile(stale, []byte("123"), 0o644); err != nil {
		t.Fatal(err)
	}

	// 1. A server loads the model, then is killed with SIGKILL.
	srv := exec.Command(os.Args[0], "-test.run=^TestRecoveryHelperServer$")
	srv.Env = append(os.Environ(), "RECOVERY_HELPER_BIN="+bin, "RECOVERY_HELPER_DIR="+dir, "RECOVERY_HELPER_STATE="+state)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	var leftover int
	if _, err := fmt.Sscanf(line, "PID %d", &leftover); err != nil {
		srv.Process.Kill()
		srv.Wait()
		t.Fatalf("helper server said %q", line)
	}
	pidFile := filepath.Join(state, fmt.Sprintf("runtime-%d.json", leftover))
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("no PID file for the runtime: %v", err)
	}
	srv.Process.Signal(syscall.SIGKILL)
	srv.Wait()
	time.Sleep(100 * time.Millisecond) // let a runtime that would die of the hangup do so
	if !alive(leftover) {
		t.Fatalf("runtime %d died with its server: nothing left to recover", leftover)
	}
	t.Cleanup(func() { syscall.Kill(leftover, syscall.SIGKILL) }) // if the lane failed to

	// 2. The next start on the lane ends it and cleans the stale lock.
	var logs logBuf
	smi := testbin.Build(t, fakeSMIPkg, "axcl-smi")
	e := New(Options{Command: hangupProof(bin), ResetCommand: "/reset", StopTimeout: time.Second,
		SMI: []string{smi}, StateDir: state, LockDir: locks, Logf: logs.logf})
	m, err := e.Load(context.Background(), dir, engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if alive(leftover) {
		t.Errorf("leftover runtime %d still running after the next start", leftover)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("leftover's PID file still there: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale lock file not removed: %v", err)
	}
	if s := logs.String(); !strings.Contains(s, fmt.Sprintf("ended leftover runtime PID %d", leftover)) {
		t.Errorf("log does not say the leftover was ended:\n%s", s)
	}
	text, _, err := generate(t, context.Background(), m, engine.Request{Prompt: "hello"})
	if err != nil || text == "" {
		t.Errorf("new runtime does not answer: %q, %v", text, err)
	}
	own := filepath.Join(state, fmt.Sprintf("runtime-%d.json", m.(*Model).PID()))
	if _, err := os.Stat(own); err != nil {
		t.Errorf("new runtime has no PID file: %v", err)
	}
	m.Close()
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("PID file kept after the runtime was closed: %v", err)
	}
}

// A PID file whose PID now names another program is removed and the
// program left alone: by start time, and by command line.
func TestRecoveryLeavesReusedPID(t *testing.T) {
	state := t.TempDir()
	unrelated := exec.Command("sleep", "60")
	if err := unrelated.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unrelated.Process.Kill(); unrelated.Wait() })
	pid := unrelated.Process.Pid
	ticks := waitTicks(t, pid)
	gone := testbin.DeadPID(t)
	writeRecord(t, state, "runtime-a.json", pidRecord{PID: pid, StartTicks: ticks + 1, // started earlier than this one
		Cmdline: []string{"sleep", "60"}, Owner: gone, OwnerTicks: 1})
	writeRecord(t, state, "runtime-b.json", pidRecord{PID: pid, StartTicks: ticks,
		Cmdline: []string{"axllm", "run", "/models/qwen3"}, Owner: gone, OwnerTicks: 1})

	var logs logBuf
	r := New(Options{StateDir: state, LockDir: t.TempDir(), SMI: []string{}, StopTimeout: time.Second, Logf: logs.logf}).Recover(context.Background())
	if len(r.Ended) != 0 || len(r.Reused) != 2 {
		t.Errorf("Recover = %+v, want two reused PIDs and nothing ended", r)
	}
	if !alive(pid) {
		t.Fatalf("unrelated process %d was killed", pid)
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Errorf("PID files of reused PIDs kept: %v", ents)
	}
	if !strings.Contains(logs.String(), "is now another program") {
		t.Errorf("log: %s", logs.String())
	}
}

// A runtime whose server still runs is not a leftover, and its locks stay.
func TestRecoveryKeepsRunningServersRuntime(t *testing.T) {
	state, locks := t.TempDir(), t.TempDir()
	rt := exec.Command("sleep", "60")
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Process.Kill(); rt.Wait() })
	ticks := waitTicks(t, rt.Process.Pid)
	cl, _ := procCmdline(rt.Process.Pid)
	self, _ := procStart(os.Getpid())
	writeRecord(t, state, "runtime-1.json", pidRecord{PID: rt.Process.Pid, StartTicks: ticks, Cmdline: cl, Owner: os.Getpid(), OwnerTicks: self})
	lock := filepath.Join(locks, "busy.lock")
	os.WriteFile(lock, nil, 0o644)

	r := New(Options{StateDir: state, LockDir: locks, SMI: []string{}, Logf: func(string, ...any) {}}).Recover(context.Background())
	if len(r.Kept) != 1 || len(r.Ended) != 0 || !alive(rt.Process.Pid) {
		t.Errorf("Recover = %+v, runtime alive %v; want it kept", r, alive(rt.Process.Pid))
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("lock removed while a runtime runs: %v", err)
	}
}

// Lock files a process has open or flocked are not stale.
func TestRecoveryLocksInUseKept(t *testing.T) {
	locks := t.TempDir()
	stale, opened, locked := filepath.Join(locks, "stale"), filepath.Join(locks, "opened"), filepath.Join(locks, "locked")
	for _, p := range []string{stale, opened, locked} {
		os.WriteFile(p, nil, 0o644)
	}
	f, _ := os.Open(opened)
	defer f.Close()
	holder := exec.Command("sleep", "60")
	holder.Stdin = f // another process has it open
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	g, _ := os.Open(locked)
	defer g.Close()
	if err := syscall.Flock(int(g.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	got := cleanLocks(locks, func(string, ...any) {})
	if !slices.Equal(got, []string{stale}) {
		t.Errorf("removed %v, want only %s", got, stale)
	}
}

// CMM in use with no runtime of ours is reported with the fix.
func TestRecoveryReportsCMMLeak(t *testing.T) {
	smi := testbin.Build(t, fakeSMIPkg, "axcl-smi")
	card := filepath.Join(t.TempDir(), "card.json")
	o := Options{StateDir: t.TempDir(), LockDir: t.TempDir(), SMI: []string{smi, "--card", card}, Logf: func(string, ...any) {}}
	for _, tc := range []struct {
		used int
		leak bool
	}{{18, false}, {1218, true}} {
		os.WriteFile(card, []byte(`{"temp_c": 50, "cmm_used_mib": `+strconv.Itoa(tc.used)+`, "cmm_total_mib": 7040}`), 0o644)
		r := New(o).Recover(context.Background())
		if (r.Leak != "") != tc.leak {
			t.Errorf("CMM used %d MiB: leak %q, want leak=%v", tc.used, r.Leak, tc.leak)
		}
		if tc.leak && !strings.Contains(r.Leak, "1218 MiB of 7040 MiB") || tc.leak && !strings.Contains(r.Leak, "axcl-smi reboot -d 0") {
			t.Errorf("leak report lacks the figures or the fix: %q", r.Leak)
		}
	}
}

func writeRecord(t *testing.T, dir, name string, rec pidRecord) {
	t.Helper()
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitTicks returns pid's start time once it has exec'd its program.
func waitTicks(t *testing.T, pid int) uint64 {
	t.Helper()
	for range 100 {
		if cl, _ := procCmdline(pid); len(cl) > 0 && filepath.Base(cl[0]) == "sleep" {
			ticks, err := procStart(pid)
			if err != nil {
				t.Fatal(err)
			}
			return ticks
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d never ran sleep", pid)
	return 0
}

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) logf(format string, args ...any) {
	l.mu.Lock()
	fmt.Fprintf(&l.b, format+"\n", args...)
	l.mu.Unlock()
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
