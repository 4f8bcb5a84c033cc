package serve

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/serve/api"
)

// host samples the machine's temperature, memory and CPU load from /proc
// and /sys. Values a platform does not expose stay nil (JSON null).
type host struct {
	root string // "/" in production; tests point it at a fake tree

	mu        sync.Mutex
	snapAt    time.Time
	snap      api.Hardware
	lastAt    time.Time
	lastIdle  uint64
	lastTotal uint64
	lastPct   *float64
}

func (h *host) path(p string) string { return filepath.Join(h.root, p) }

// snapshot reads the current values, at most every 200 ms (reading /proc
// and /sys costs ~75 µs; answers under load reuse the last reading). CPU
// load is the busy share since the previous reading.
func (h *host) snapshot() api.Hardware {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.snapAt.IsZero() && time.Since(h.snapAt) < 200*time.Millisecond {
		return h.snap
	}
	h.snap = api.Hardware{TempC: h.temp(), RAMUsedMB: h.ramUsed(), CPULoadPct: h.cpuLoadLocked()}
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

func (h *host) ramUsed() *float64 {
	f, err := os.Open(h.path("proc/meminfo"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var total, avail float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(fs[1], 64)
		switch fs[0] {
		case "MemTotal:":
			total = v
		case "MemAvailable:":
			avail = v
		}
	}
	if total == 0 {
		return nil
	}
	mb := (total - avail) / 1024
	return &mb
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

// telemetry builds the metrics block for one generation.
func (s *Server) telemetry(res engine.Result, l *Lease, total time.Duration) *api.Metrics {
	m := &api.Metrics{
		TTFTMS:     float64(res.TTFT) / float64(time.Millisecond),
		TPS:        res.DecodeTPS(),
		PrefillTPS: res.PrefillTPS(),
		TotalTimeS: total.Seconds(),
		QueueMS:    float64(l.Queued) / float64(time.Millisecond),
		LoadMS:     float64(l.LoadDuration) / float64(time.Millisecond),
		Lane:       l.Lane,
		Hardware:   s.host.snapshot(),
	}
	if len(res.Extra) > 0 {
		m.Hardware.Extra = res.Extra
	}
	return m
}
