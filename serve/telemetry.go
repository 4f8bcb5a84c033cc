package serve

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// host samples the machine's temperature, memory and CPU load from /proc
// and /sys. Values a platform does not expose stay nil (JSON null).
type host struct {
	root string // "/" in production; tests point it at a fake tree

	mu        sync.Mutex
	snapAt    time.Time
	snap      hostReading
	lastAt    time.Time
	lastIdle  uint64
	lastTotal uint64
	lastPct   *float64
}

// hostReading is one look at the host.
type hostReading struct {
	TempC      *float64 // hottest thermal zone
	RAMUsedMB  *float64 // MemTotal − MemAvailable
	RAMTotalMB *float64
	CPULoadPct *float64
}

func (h *host) path(p string) string { return filepath.Join(h.root, p) }

// snapshot reads the current values, at most every 200 ms (reading /proc
// and /sys costs ~75 µs; answers under load reuse the last reading). CPU
// load is the busy share since the previous reading.
func (h *host) snapshot() hostReading {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.snapAt.IsZero() && time.Since(h.snapAt) < 200*time.Millisecond {
		return h.snap
	}
	used, total := h.ram()
	h.snap = hostReading{TempC: h.temp(), RAMUsedMB: used, RAMTotalMB: total, CPULoadPct: h.cpuLoadLocked()}
	h.snapAt = time.Now()
	return h.snap
}

func (h *host) temp() *float64 {
	zones, _ := filepath.Glob(h.path("sys/class/thermal/thermal_zone*/temp"))
	var best *float64
	for _, z := range zones {
		b, err := os.ReadFile(z)
		if err != nil {
			continue
		}
		milli, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil {
			continue
		}
		c := milli / 1000
		if best == nil || c > *best {
			best = &c
		}
	}
	return best
}

func (h *host) ram() (used, total *float64) {
	f, err := os.Open(h.path("proc/meminfo"))
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	var totalKB, avail float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(fs[1], 64)
		switch fs[0] {
		case "MemTotal:":
			totalKB = v
		case "MemAvailable:":
			avail = v
		}
	}
	if totalKB == 0 {
		return nil, nil
	}
	usedMB, totalMB := (totalKB-avail)/1024, totalKB/1024
	return &usedMB, &totalMB
}

func (h *host) cpuLoad() *float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cpuLoadLocked()
}

func (h *host) cpuLoadLocked() *float64 {
	if time.Since(h.lastAt) < 100*time.Millisecond && h.lastPct != nil {
		return h.lastPct
	}
	b, err := os.ReadFile(h.path("proc/stat"))
	if err != nil {
		return nil
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fs := strings.Fields(line)
	if len(fs) < 5 || fs[0] != "cpu" {
		return nil
	}
	var total, idle uint64
	for i, f := range fs[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	var pct *float64
	if h.lastTotal > 0 && total > h.lastTotal {
		p := 100 * (1 - float64(idle-h.lastIdle)/float64(total-h.lastTotal))
		pct = &p
	}
	h.lastAt, h.lastIdle, h.lastTotal = time.Now(), idle, total
	if pct != nil {
		h.lastPct = pct
	}
	return h.lastPct
}

// telemetry builds the metrics block for one generation. Host figures are
// read now; the NPU's come from the monitor's samples, so an answer never
// waits for axcl-smi, and npu_delta_t compares the last sample with the
// one taken before the request began.
func (s *Server) telemetry(res engine.Result, l *Lease, total time.Duration) *api.Metrics {
	m := &api.Metrics{
		TTFTMS:     float64(res.TTFT) / float64(time.Millisecond),
		TPS:        res.DecodeTPS(),
		PrefillTPS: res.PrefillTPS(),
		TotalTimeS: total.Seconds(),
		QueueMS:    float64(l.Queued) / float64(time.Millisecond),
		LoadMS:     float64(l.LoadDuration) / float64(time.Millisecond),
		Lane:       l.Lane,
		Hardware:   s.mon.hardware(time.Now().Add(-total)),
	}
	if len(res.Extra) > 0 {
		m.Hardware.Extra = res.Extra
	}
	return m
}
