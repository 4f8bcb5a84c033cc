package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/doctor"
	"github.com/edgectl/edgectl/internal/testbin"
)

// deviceBoard is a fake board for `doctor --device`: a filesystem root
// (dev/, proc/modules, tmp/axcl), the fake axcl-smi reading a card file,
// a serve config naming it, and a private cache for the lane's PID files.
type deviceBoard struct {
	root, cardFile, config, pids string
}

func newDeviceBoard(t *testing.T, driver bool, card string) *deviceBoard {
	t.Helper()
	b := &deviceBoard{root: t.TempDir(), cardFile: filepath.Join(t.TempDir(), "card.json"), config: filepath.Join(t.TempDir(), "serve.json")}
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	b.pids = filepath.Join(cache, "edgectl", "axcl", "pids")
	if driver { // what a host with axclhost-dkms loaded shows
		writeFile(t, filepath.Join(b.root, "dev", "axcl_host"), "")
		writeFile(t, filepath.Join(b.root, "proc", "modules"), "axcl_host 327680 0 - Live 0x0000000000000000 (O)\nnvme 61440 3 - Live 0x0\n")
	}
	writeFile(t, b.cardFile, card)
	smi := testbin.Build(t, "github.com/edgectl/edgectl/engine/axcl/testdata/fakesmi", "axcl-smi")
	cfg, _ := json.Marshal(map[string]any{"axcl": map[string]any{"smi": []string{smi, "--card", b.cardFile}}})
	writeFile(t, b.config, string(cfg))
	return b
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b *deviceBoard) doctor(t *testing.T, extra ...string) (int, doctor.Report, map[string]doctor.Finding) {
	t.Helper()
	args := append([]string{"doctor", "--device", "--json", "--config", b.config, "--device-root", b.root}, extra...)
	code, out, stderr := runCLI(t, args...)
	var r doctor.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --device output %q (stderr %q): %v", out, stderr, err)
	}
	byID := map[string]doctor.Finding{}
	for _, f := range r.Findings {
		if f.Evidence == "" {
			t.Fatalf("finding %s has no evidence", f.ID)
		}
		byID[f.ID] = f
	}
	return code, r, byID
}

func TestDoctorDeviceGoodCard(t *testing.T) {
	b := newDeviceBoard(t, true, `{"temp_c": 54, "cmm_used_mib": 18, "cmm_total_mib": 7040}`)
	code, r, f := b.doctor(t)
	if code != exitOK || r.Verdict != "pass" || r.Kind != "device" {
		t.Fatalf("exit %d verdict %s: %+v", code, r.Verdict, r.Findings)
	}
	if d := f["axcl-driver"]; d.Severity != doctor.Info || !strings.Contains(d.Evidence, "axcl_host") {
		t.Fatalf("driver finding %+v", d)
	}
	if s := f["axcl-smi"]; !strings.Contains(s.Message, "AX650N") || !strings.Contains(s.Evidence, "54C") {
		t.Fatalf("axcl-smi finding %+v", s)
	}
	if m := f["cmm"]; m.Severity != doctor.Info || !strings.Contains(m.Evidence, "7022 MiB free") {
		t.Fatalf("cmm finding %+v", m)
	}
	if _, hot := f["card-hot"]; hot {
		t.Fatal("a 54 °C card reported hot")
	}
	// The people-facing report: one verdict line, then each finding.
	code, out, _ := runCLI(t, "doctor", "--device", "--config", b.config, "--device-root", b.root)
	if code != exitOK || !strings.HasPrefix(out, "card 0 (target ax650): pass\n") || !strings.Contains(out, "evidence: CMM 7022 MiB free") {
		t.Fatalf("exit %d, text report:\n%s", code, out)
	}
}

func TestDoctorDeviceHotCardAndLowCMM(t *testing.T) {
	b := newDeviceBoard(t, true, `{"temp_c": 91, "cmm_used_mib": 5000, "cmm_total_mib": 7040}`)
	code, r, f := b.doctor(t)
	// Warnings alone keep exit 0, as for a checkpoint.
	if code != exitOK || f["card-hot"].Severity != doctor.Warning || !strings.Contains(f["card-hot"].Evidence, "91 °C") {
		t.Fatalf("exit %d: %+v", code, r.Findings)
	}
	if m := f["cmm"]; m.Severity != doctor.Warning || !strings.Contains(m.Evidence, "2040 MiB free") || m.Fix == "" {
		t.Fatalf("cmm finding %+v", m)
	}
	// serve's hot_temp_c moves the limit.
	writeFile(t, b.config, strings.Replace(mustRead(t, b.config), "{", `{"hot_temp_c": 95,`, 1))
	if _, _, f := b.doctor(t); f["card-hot"].ID != "" {
		t.Fatalf("91 °C under a 95 °C limit reported hot: %+v", f["card-hot"])
	}
	// A full pool: no model fits, blocking.
	writeFile(t, b.cardFile, `{"temp_c": 60, "cmm_used_mib": 6500, "cmm_total_mib": 7040}`)
	code, r, f = b.doctor(t)
	if code != exitBlocked || r.Verdict != "blocked" || f["cmm"].Severity != doctor.Blocking {
		t.Fatalf("exit %d verdict %s: %+v", code, r.Verdict, r.Findings)
	}
}

func TestDoctorDeviceNoCard(t *testing.T) {
	b := newDeviceBoard(t, false, `{"missing": true}`)
	code, r, f := b.doctor(t)
	if code != exitBlocked || r.Verdict != "blocked" {
		t.Fatalf("exit %d verdict %s", code, r.Verdict)
	}
	if d := f["axcl-driver"]; d.Severity != doctor.Blocking || !strings.Contains(d.Fix, "axclhost-dkms") {
		t.Fatalf("driver finding %+v", d)
	}
	// axcl-smi runs but cannot reach a card: its own error is the evidence.
	if s := f["axcl-smi"]; s.Severity != doctor.Blocking || !strings.Contains(s.Evidence, "0x8030010b") {
		t.Fatalf("axcl-smi finding %+v", s)
	}
	if _, ok := f["cmm"]; ok {
		t.Fatal("CMM judged without a card")
	}
	// No axcl-smi at all.
	writeFile(t, b.config, `{"axcl": {"smi": ["`+filepath.Join(b.root, "no-such-axcl-smi")+`"]}}`)
	code, _, f = b.doctor(t)
	if code != exitBlocked || !strings.Contains(f["axcl-smi"].Message, "not installed") {
		t.Fatalf("exit %d: %+v", code, f["axcl-smi"])
	}
}

func TestDoctorDeviceLeftoversReportedNotTouched(t *testing.T) {
	b := newDeviceBoard(t, true, `{"temp_c": 50, "cmm_used_mib": 2100, "cmm_total_mib": 7040}`)
	// A runtime whose server is gone: a real process, and an owner PID
	// that has exited.
	rt := exec.Command("sleep", "60")
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Process.Kill(); rt.Wait() })
	// Start returns before the kernel has laid out sleep's arguments: for
	// a moment /proc shows an empty command line, which the record must
	// not capture (doctor would call it stale; engine/axcl execCmdline).
	var cmdline []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		cmdline = strings.Split(strings.TrimSuffix(mustRead(t, fmt.Sprintf("/proc/%d/cmdline", rt.Process.Pid)), "\x00"), "\x00")
		if filepath.Base(cmdline[0]) == "sleep" || time.Now().After(deadline) {
			break
		}
	}
	ticks := startTicks(t, rt.Process.Pid)
	rec, _ := json.Marshal(map[string]any{"pid": rt.Process.Pid, "start_ticks": ticks, "cmdline": cmdline,
		"owner_pid": testbin.DeadPID(t), "owner_start_ticks": 1, "model_dir": "/models/qwen3", "device": 0})
	pidFile := filepath.Join(b.pids, fmt.Sprintf("runtime-%d.json", rt.Process.Pid))
	writeFile(t, pidFile, string(rec))
	lock := filepath.Join(b.root, "tmp", "axcl", "axcl_dev0.lock")
	writeFile(t, lock, "")

	code, r, f := b.doctor(t)
	if code != exitFixable || r.Verdict != "fixable" {
		t.Fatalf("exit %d verdict %s: %+v", code, r.Verdict, r.Findings)
	}
	pid := strconv.Itoa(rt.Process.Pid)
	if l := f["leftover-runtime"]; l.Severity != doctor.Fixable || !strings.Contains(l.Evidence, pid) || !strings.Contains(l.Fix, "kill "+pid) {
		t.Fatalf("leftover finding %+v", l)
	}
	if l := f["stale-locks"]; l.Severity != doctor.Fixable || !strings.Contains(l.Evidence, lock) {
		t.Fatalf("stale-locks finding %+v", l)
	}
	// CMM held by the leftover is its own, not a leak.
	if _, ok := f["cmm-leak"]; ok {
		t.Fatalf("leftover's CMM reported as a leak: %+v", f["cmm-leak"])
	}
	// Doctor only reports: the runtime, its PID file and the lock remain.
	if startTicks(t, rt.Process.Pid) != ticks {
		t.Fatal("doctor ended the leftover runtime")
	}
	for _, p := range []string{pidFile, lock} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("doctor removed %s: %v", p, err)
		}
	}
	// With the runtime gone, its PID file is stale and the CMM it held
	// (the fake card still says 2100 MiB) is a leak.
	rt.Process.Kill()
	rt.Wait()
	_, _, f = b.doctor(t)
	if f["stale-pid-file"].Severity != doctor.Info || f["cmm-leak"].Severity != doctor.Warning || f["leftover-runtime"].ID != "" {
		t.Fatalf("after the runtime ended: %+v", f)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startTicks reads /proc/PID/stat field 22 (start time since boot).
func startTicks(t *testing.T, pid int) uint64 {
	t.Helper()
	s := mustRead(t, fmt.Sprintf("/proc/%d/stat", pid))
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
