package axcl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Recovery: a server that is killed (SIGKILL, OOM, a crash) cannot stop the
// runtimes it started; one that ignores the PTY hangup, or hangs in the
// driver, keeps the card's CMM pool (ax-llm#60) and the next load fails. So
// the lane writes a PID file per runtime it starts and, before starting
// another, ends those whose server is gone — by PID file, never by name,
// and only after checking the PID still belongs to that program (its start
// time and command line), so a reused PID is never signalled.

// pidRecord is the PID file of one runtime the lane started.
type pidRecord struct {
	PID        int       `json:"pid"`
	StartTicks uint64    `json:"start_ticks"` // /proc/PID/stat field 22
	Cmdline    []string  `json:"cmdline"`
	Owner      int       `json:"owner_pid"` // the edgectl process that started it
	OwnerTicks uint64    `json:"owner_start_ticks"`
	Dir        string    `json:"model_dir"`
	Device     int       `json:"device"`
	Started    time.Time `json:"started"`
}

// Recovery says what the lane found before starting a runtime.
type Recovery struct {
	Ended        []int    // leftover runtimes ended (PIDs)
	Kept         []string // PID files of live runtimes of a running server
	Reused       []int    // PID files whose PID now belongs to another program: not signalled
	LocksRemoved []string // stale lock files removed
	Leak         string   // CMM in use with no runtime of ours running, with the fix; "" if none
}

// recoverMu makes "end leftovers, clean locks, start, write the PID file"
// one step per process, so a runtime being started is never taken for
// a leftover or its fresh lock files for stale ones.
var recoverMu sync.Mutex

// Recover ends the runtimes a previous server left running, removes stale
// lock files and checks the card's CMM. The lane does it before every
// start; serve and doctor may call it at start-up.
func (e *Engine) Recover(ctx context.Context) Recovery {
	recoverMu.Lock()
	defer recoverMu.Unlock()
	return recoverLeftovers(ctx, e.opts)
}

func stateDir(o Options) string {
	if o.StateDir != "" {
		return o.StateDir
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "edgectl", "axcl", "pids")
}

func lockDir(o Options) string {
	if o.LockDir != "" {
		return o.LockDir
	}
	return "/tmp/axcl" // the path the vendor runtime uses, not $TMPDIR
}

// recoverLeftovers does Recover's work; the caller holds recoverMu.
func recoverLeftovers(ctx context.Context, o Options) Recovery {
	var r Recovery
	dir := stateDir(o)
	entries, _ := os.ReadDir(dir) // none yet: nothing to recover
	live := 0
	for _, ent := range entries {
		if !strings.HasSuffix(ent.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, ent.Name())
		b, err := os.ReadFile(path)
		var rec pidRecord
		if err != nil || json.Unmarshal(b, &rec) != nil || rec.PID <= 0 {
			o.Logf("axcl: warning: %s: unreadable PID file, removed", path)
			os.Remove(path)
			continue
		}
		switch {
		case !rec.sameProcess():
			if alive(rec.PID) {
				r.Reused = append(r.Reused, rec.PID)
				o.Logf("axcl: PID %d from %s is now another program: left alone, PID file removed", rec.PID, path)
			}
			os.Remove(path)
		case rec.ownerAlive():
			live++
			r.Kept = append(r.Kept, path)
		default:
			if err := endProcess(rec, o.StopTimeout); err != nil {
				live++
				o.Logf("axcl: warning: leftover runtime PID %d (%s): %v (end it by hand: kill -9 %d)", rec.PID, rec.Dir, err, rec.PID)
				continue
			}
			r.Ended = append(r.Ended, rec.PID)
			o.Logf("axcl: ended leftover runtime PID %d (%s) started by edgectl PID %d, which is gone", rec.PID, rec.Dir, rec.Owner)
			os.Remove(path)
		}
	}
	if live == 0 {
		r.LocksRemoved = cleanLocks(lockDir(o), o.Logf)
		r.Leak = cmmLeak(ctx, o)
		if r.Leak != "" {
			o.Logf("axcl: warning: %s", r.Leak)
		}
	}
	return r
}

// cmmLeakMiB is the CMM an idle card reports in use (18 MiB on an AX-M1)
// plus margin: more than this with no runtime of ours is someone's model.
const cmmLeakMiB = 64

// cmmLeak reads the card through axcl-smi; with no runtime of ours running,
// CMM in use is another program's or leaked by a crashed runtime.
func cmmLeak(ctx context.Context, o Options) string {
	c, err := (&Engine{opts: o}).Card(ctx)
	if err != nil || c.CMMUsedMiB == nil || *c.CMMUsedMiB <= cmmLeakMiB {
		return ""
	}
	total := "?"
	if c.CMMTotalMiB != nil {
		total = strconv.FormatFloat(*c.CMMTotalMiB, 'f', 0, 64)
	}
	return fmt.Sprintf("card %d: CMM %.0f MiB of %s MiB in use with no edgectl runtime running: another program holds it or a crashed runtime leaked it (ax-llm#60); run `axcl-smi` to see its processes and stop them, or reset the card with `axcl-smi reboot -d %d`",
		o.Device, *c.CMMUsedMiB, total, o.Device)
}

// writePIDFile records a runtime just started; it returns the file's path.
func writePIDFile(o Options, pid int, args []string, dir string) (string, error) {
	rec := pidRecord{PID: pid, Cmdline: args, Owner: os.Getpid(), Dir: dir, Device: o.Device, Started: time.Now().UTC()}
	rec.StartTicks, _ = procStart(pid)
	rec.OwnerTicks, _ = procStart(rec.Owner)
	if cl := execCmdline(pid); cl != nil {
		rec.Cmdline = cl // what /proc will show later (the exec'd program)
	}
	d := stateDir(o)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("axcl state dir %s: %w (make it writable, or set the lane's StateDir)", d, err)
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	path := filepath.Join(d, fmt.Sprintf("runtime-%d.json", pid))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("write PID file %s: %w", path, err)
	}
	return path, os.Rename(tmp, path)
}

// sameProcess reports whether rec.PID is still the program the file
// recorded: same start time and command line.
func (rec pidRecord) sameProcess() bool {
	ticks, err := procStart(rec.PID)
	if err != nil || rec.StartTicks == 0 || ticks != rec.StartTicks {
		return false
	}
	cl, err := procCmdline(rec.PID)
	return err == nil && slices.Equal(cl, rec.Cmdline)
}

// ownerAlive reports whether the server that started rec still runs (this
// process, or another edgectl serving on the same card).
func (rec pidRecord) ownerAlive() bool {
	ticks, err := procStart(rec.Owner)
	return err == nil && ticks == rec.OwnerTicks
}

// endProcess stops a verified leftover: SIGTERM, then SIGKILL, each given
// wait. The runtime leads its own process group (it was started with
// Setsid), so the group is signalled when it still is one.
func endProcess(rec pidRecord, wait time.Duration) error {
	if wait <= 0 {
		wait = 10 * time.Second
	}
	target := rec.PID
	if pg, err := syscall.Getpgid(rec.PID); err == nil && pg == rec.PID {
		target = -rec.PID
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("%v: %w", sig, err)
		}
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if !rec.sameProcess() || !alive(rec.PID) {
				return nil
			}
		}
	}
	return fmt.Errorf("still running %v after SIGKILL (stuck in the driver? reboot the card: axcl-smi reboot -d %d)", 2*wait, rec.Device)
}

// procStat returns the fields of /proc/PID/stat after the command name.
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

// procStart is the process's start time in clock ticks since boot (field
// 22): with the PID it names one process across PID reuse.
func procStart(pid int) (uint64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	f, err := procStat(pid)
	return err == nil && len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// execCmdline is the command line of pid, a program just started, as
// /proc will show it from now on; nil if it cannot be read. cmd.Start
// returns when the exec has closed the child's copy of its status pipe,
// which is before the kernel has laid out the new program's arguments:
// for that moment /proc shows an empty command line, and a record of it
// would never match the runtime again (sameProcess), so Recover would
// leave it running. It waits up to a second for the arguments.
func execCmdline(pid int) []string {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		cl, err := procCmdline(pid)
		if err != nil {
			return nil
		}
		if cl[0] != "" {
			return cl
		}
		if time.Now().After(deadline) {
			return nil
		}
	}
}

func procCmdline(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
}
