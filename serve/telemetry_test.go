package serve

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestHostTelemetryFromProcAndSys(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/class/thermal/thermal_zone0/temp", "48500\n")
	write("sys/class/thermal/thermal_zone1/temp", "81000\n")
	write("proc/meminfo", "MemTotal:        8000000 kB\nMemFree:  100 kB\nMemAvailable:    6976000 kB\n")
	write("proc/stat", "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n")
	h := &host{root: root}
	hw := h.snapshot()
	if hw.TempC == nil || *hw.TempC != 81 {
		t.Errorf("temp %v, want the hottest zone (81)", hw.TempC)
	}
	if hw.RAMUsedMB == nil || *hw.RAMUsedMB != 1000 {
		t.Errorf("ram %v, want (8000000-6976000)/1024", hw.RAMUsedMB)
	}
	if hw.CPULoadPct != nil {
		t.Errorf("cpu load %v from a single sample", *hw.CPULoadPct)
	}
	// 1000 more jiffies, 250 of them idle+iowait: 75 % busy.
	write("proc/stat", "cpu  500 0 450 850 200 0 0 0 0 0\n")
	h.lastAt = h.lastAt.Add(-200 * time.Millisecond)
	h.snapAt = h.snapAt.Add(-300 * time.Millisecond)
	hw = h.snapshot()
	if hw.CPULoadPct == nil || *hw.CPULoadPct != 75 {
		t.Errorf("cpu load %v, want 75", hw.CPULoadPct)
	}
	// A platform without these files reports nulls, not zeros.
	empty := (&host{root: t.TempDir()}).snapshot()
	if empty.TempC != nil || empty.RAMUsedMB != nil || empty.CPULoadPct != nil {
		t.Errorf("missing files gave %+v", empty)
	}
}
