package serve

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/edgectl/edgectl/api"
)

// NPUReading is what an accelerator reports about itself (the axcl lane
// reads it from axcl-smi); nil fields are unknown.
type NPUReading struct {
	TempC      *float64
	CMMUsedMB  *float64
	CMMTotalMB *float64
}

// DefaultHotTempC is the temperature above which /health says "hot": the
// AX650's NPU throttles in the high 80s and the seeds warn at 85 °C.
const DefaultHotTempC = 85.0

// sample is one reading of every sensor.
type sample struct {
	at   time.Time
	host hostReading
	npu  NPUReading
}

// monitor samples the host and the NPU every few seconds, in the
// background: axcl-smi is a process taking tens of milliseconds, too slow
// to run inside every answer, and a temperature rise needs a reading from
// before the request. It also notices (and logs) when the device runs hot.
type monitor struct {
	host    *host
	npu     func(context.Context) (NPUReading, error) // nil: no NPU sensor
	soc     bool                                      // an AX650 SoC board: the thermal zones are the NPU's die
	hotC    float64
	every   time.Duration
	logf    func(string, ...any)
	started time.Time

	sampling sync.Mutex // one reading at a time
	mu       sync.Mutex
	ring     []sample // oldest first, at most ringSize
	hot      bool
	npuErr   string // the last NPU error logged, so a broken card is logged once

	stopOnce sync.Once
	stop     chan struct{}
}

const ringSize = 512 // 17 minutes at the default period

func newMonitor(opts Options) *monitor {
	m := &monitor{host: &host{root: opts.sysRoot}, npu: opts.NPU, hotC: opts.HotTempC, every: opts.sampleEvery,
		logf: opts.Logf, started: time.Now(), stop: make(chan struct{})}
	if m.host.root == "" {
		m.host.root = "/"
	}
	if m.hotC <= 0 {
		m.hotC = DefaultHotTempC
	}
	if m.every <= 0 {
		m.every = 2 * time.Second
	}
	if _, err := os.Stat(m.host.path("proc/ax_proc")); err == nil {
		m.soc = true
	}
	m.host.cpuLoad() // the first sample: CPU load is a difference between two
	return m
}

// run samples until close; the first reading is taken at once.
func (m *monitor) run() {
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		m.read()
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
	}
}

func (m *monitor) close() {
	m.stopOnce.Do(func() { close(m.stop) })
}

// read takes a sample now and keeps it.
func (m *monitor) read() sample {
	m.sampling.Lock()
	defer m.sampling.Unlock()
	s := sample{at: time.Now(), host: m.host.snapshot()}
	if m.npu != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := m.npu(ctx)
		cancel()
		m.mu.Lock()
		switch {
		case err != nil && err.Error() != m.npuErr:
			m.npuErr = err.Error()
			m.logf("warning: NPU telemetry: %v", err)
		case err == nil:
			s.npu, m.npuErr = r, ""
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ring = append(m.ring, s)
	if len(m.ring) > ringSize {
		m.ring = append(m.ring[:0], m.ring[len(m.ring)-ringSize:]...)
	}
	m.checkHotLocked(s)
	return s
}

// checkHotLocked logs once when the hottest sensor crosses the limit and
// once when it is back under it.
func (m *monitor) checkHotLocked(s sample) {
	c, where := m.hottest(s)
	switch {
	case c != nil && *c > m.hotC && !m.hot:
		m.hot = true
		m.logf("warning: hot: %s at %.1f °C, above the %.0f °C limit (--hot-temp); the NPU throttles when hot: check the card's heatsink and airflow", where, *c, m.hotC)
	case m.hot && (c == nil || *c <= m.hotC):
		m.hot = false
		if c != nil {
			m.logf("temperature back to %.1f °C (%s), under the %.0f °C limit", *c, where, m.hotC)
		}
	}
}

// hottest is the hotter of the NPU and the host, and which one it is.
func (m *monitor) hottest(s sample) (*float64, string) {
	npu, host := m.npuTemp(s), s.host.TempC
	switch {
	case npu != nil && (host == nil || *npu >= *host):
		return npu, "NPU"
	case host != nil:
		return host, "host"
	}
	return nil, ""
}

// npuTemp is the card's own sensor, else the SoC's zones on a board whose
// NPU shares the die; nil on a host with neither.
func (m *monitor) npuTemp(s sample) *float64 {
	if s.npu.TempC != nil {
		return s.npu.TempC
	}
	if m.soc {
		return s.host.TempC
	}
	return nil
}

// latest is the newest sample, read now if there is none yet.
func (m *monitor) latest() sample {
	m.mu.Lock()
	if n := len(m.ring); n > 0 {
		s := m.ring[n-1]
		m.mu.Unlock()
		return s
	}
	m.mu.Unlock()
	return m.read()
}

// at is the newest sample taken at or before t, else the oldest kept.
func (m *monitor) at(t time.Time) sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.ring) - 1; i >= 0; i-- {
		if !m.ring[i].at.After(t) {
			return m.ring[i]
		}
	}
	if len(m.ring) > 0 {
		return m.ring[0]
	}
	return sample{}
}

func (m *monitor) isHot() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hot
}

// hardware is usage.metrics.hardware for a request that began at start:
// host figures read now, NPU figures from the latest sample, and the NPU
// temperature's rise since the sample before start.
func (m *monitor) hardware(start time.Time) api.Hardware {
	end := m.latest()
	h := m.host.snapshot()
	hw := api.Hardware{TempC: h.TempC, RAMUsageMB: h.RAMUsedMB, CPULoadPct: h.CPULoadPct,
		NPUCMMUsedMB: end.npu.CMMUsedMB, NPUCMMTotalMB: end.npu.CMMTotalMB}
	end.host = h // the freshest host reading, for SoC boards
	hw.NPUTempC = m.npuTemp(end)
	if before := m.npuTemp(m.at(start)); before != nil && hw.NPUTempC != nil {
		d := *hw.NPUTempC - *before
		hw.NPUDeltaT = &d
	}
	return hw
}
