package serve

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// metrics are the counters behind GET /metrics (Prometheus text format,
// written by hand: a dozen series do not justify the client library).
type metrics struct {
	loads, loadFailures, evictions, unloadErrors, watchdogKills, rejected atomic.Int64

	mu       sync.Mutex
	requests map[[3]string]int64 // route, model, code
	perModel map[string]*modelStats
}

type modelStats struct {
	promptTokens, completionTokens int64
	ttftSum, decodeSum, prefillSum float64
	n                              int64
}

func newMetrics() *metrics {
	return &metrics{requests: map[[3]string]int64{}, perModel: map[string]*modelStats{}}
}

func (m *metrics) request(route, model string, code int) {
	m.mu.Lock()
	m.requests[[3]string{route, model, fmt.Sprint(code)}]++
	m.mu.Unlock()
}

func (m *metrics) generation(model string, prompt, completion int, ttft, prefill, decode float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.perModel[model]
	if st == nil {
		st = &modelStats{}
		m.perModel[model] = st
	}
	st.promptTokens += int64(prompt)
	st.completionTokens += int64(completion)
	st.ttftSum += ttft
	st.prefillSum += prefill
	st.decodeSum += decode
	st.n++
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.metrics
	var b strings.Builder
	series := func(name, typ, help string, lines ...string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	counter := func(name, help string, v int64) {
		series(name, "counter", help, fmt.Sprintf("%s %d", name, v))
	}
	waiting, loaded, busy, used := s.sched.stats()
	series("edgectl_queue_waiting", "gauge", "Requests waiting for a slot, a load or memory.", fmt.Sprintf("edgectl_queue_waiting %d", waiting))
	lanes := make([]string, 0, len(loaded))
	for l := range loaded {
		lanes = append(lanes, l)
	}
	sort.Strings(lanes)
	var ll, lb, lu []string
	for _, l := range lanes {
		ll = append(ll, fmt.Sprintf("edgectl_models_loaded{lane=%q} %d", l, loaded[l]))
		lb = append(lb, fmt.Sprintf("edgectl_lane_busy{lane=%q} %d", l, busy[l]))
		lu = append(lu, fmt.Sprintf("edgectl_lane_memory_bytes{lane=%q} %d", l, used[l]))
	}
	series("edgectl_models_loaded", "gauge", "Models loaded per lane.", ll...)
	series("edgectl_lane_busy", "gauge", "Requests running per lane.", lb...)
	series("edgectl_lane_memory_bytes", "gauge", "Memory held by loaded and unloading models per lane.", lu...)
	counter("edgectl_model_loads_total", "Successful model loads.", m.loads.Load())
	counter("edgectl_model_load_failures_total", "Failed model loads.", m.loadFailures.Load())
	counter("edgectl_evictions_total", "Idle models evicted to make room.", m.evictions.Load())
	counter("edgectl_unload_errors_total", "Unloads that failed or left NPU memory allocated.", m.unloadErrors.Load())
	counter("edgectl_watchdog_kills_total", "Backends killed for producing no token in time.", m.watchdogKills.Load())
	counter("edgectl_rejected_total", "Requests answered 503 because the queue was full.", m.rejected.Load())

	m.mu.Lock()
	var req []string
	for k, v := range m.requests {
		req = append(req, fmt.Sprintf("edgectl_requests_total{route=%q,model=%q,code=%q} %d", k[0], k[1], k[2], v))
	}
	sort.Strings(req)
	var names []string
	for n := range m.perModel {
		names = append(names, n)
	}
	sort.Strings(names)
	var pt, ct, tt, pf, dc []string
	for _, n := range names {
		st := m.perModel[n]
		pt = append(pt, fmt.Sprintf("edgectl_prompt_tokens_total{model=%q} %d", n, st.promptTokens))
		ct = append(ct, fmt.Sprintf("edgectl_completion_tokens_total{model=%q} %d", n, st.completionTokens))
		tt = append(tt, fmt.Sprintf("edgectl_ttft_seconds_sum{model=%q} %g", n, st.ttftSum), fmt.Sprintf("edgectl_ttft_seconds_count{model=%q} %d", n, st.n))
		pf = append(pf, fmt.Sprintf("edgectl_prefill_seconds_total{model=%q} %g", n, st.prefillSum))
		dc = append(dc, fmt.Sprintf("edgectl_decode_seconds_total{model=%q} %g", n, st.decodeSum))
	}
	m.mu.Unlock()
	series("edgectl_requests_total", "counter", "HTTP requests by route, model and status.", req...)
	series("edgectl_prompt_tokens_total", "counter", "Prompt tokens processed.", pt...)
	series("edgectl_completion_tokens_total", "counter", "Tokens generated.", ct...)
	series("edgectl_ttft_seconds", "summary", "Time to first token.", tt...)
	series("edgectl_prefill_seconds_total", "counter", "Time spent in prompt processing.", pf...)
	series("edgectl_decode_seconds_total", "counter", "Time spent generating.", dc...)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(b.String()))
}
