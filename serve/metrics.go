package serve

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/edgectl/edgectl/internal/clip"
)

// unknownModel is the model label of a request for a name that is not
// served (or of no model at all): label values come only from the model
// list, so invented names cannot grow /metrics. Served names always carry
// a ":tag", so this never collides with one.
const unknownModel = "unknown"

// metrics are the series behind GET /metrics, in a registry of the
// Server's own (tests run many servers in one process; nothing global).
// Every label value comes from a bounded set: served model names, lane
// names, route patterns of the route table and status codes.
type metrics struct {
	reg *prometheus.Registry

	loads, loadFailures, evictions, unloadErrors, watchdogKills, rejected prometheus.Counter

	requests         *prometheus.CounterVec   // route, model, code
	duration         *prometheus.HistogramVec // route, model
	promptTokens     *prometheus.CounterVec   // model
	completionTokens *prometheus.CounterVec   // model
	prefillSeconds   *prometheus.CounterVec   // model
	decodeSeconds    *prometheus.CounterVec   // model
	ttft             *prometheus.HistogramVec // model
	decodeTPS        *prometheus.HistogramVec // model
	queueWait        *prometheus.HistogramVec // lane
}

func newMetrics(sched func() *Scheduler) *metrics {
	reg := prometheus.NewRegistry()
	f := factory{reg}
	m := &metrics{
		reg:           reg,
		loads:         f.counter("edgectl_model_loads_total", "Successful model loads."),
		loadFailures:  f.counter("edgectl_model_load_failures_total", "Failed model loads."),
		evictions:     f.counter("edgectl_evictions_total", "Idle models evicted to make room."),
		unloadErrors:  f.counter("edgectl_unload_errors_total", "Unloads that failed or left NPU memory allocated."),
		watchdogKills: f.counter("edgectl_watchdog_kills_total", "Backends killed for producing no token in time."),
		rejected:      f.counter("edgectl_rejected_total", "Requests answered 503 because the queue was full."),

		requests: f.counterVec("edgectl_requests_total", "HTTP requests by route, model and status.", "route", "model", "code"),
		duration: f.histogramVec("edgectl_request_duration_seconds", "Time from request to the end of the answer (streams included).",
			[]float64{.005, .025, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}, "route", "model"),
		promptTokens:     f.counterVec("edgectl_prompt_tokens_total", "Prompt tokens processed.", "model"),
		completionTokens: f.counterVec("edgectl_completion_tokens_total", "Tokens generated.", "model"),
		prefillSeconds:   f.counterVec("edgectl_prefill_seconds_total", "Time spent in prompt processing.", "model"),
		decodeSeconds:    f.counterVec("edgectl_decode_seconds_total", "Time spent generating.", "model"),
		ttft: f.histogramVec("edgectl_ttft_seconds", "Time to first token.",
			[]float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, "model"),
		decodeTPS: f.histogramVec("edgectl_decode_tokens_per_second", "Decode speed of each generation.",
			[]float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}, "model"),
		queueWait: f.histogramVec("edgectl_queue_wait_seconds", "Time a request waited for a lane slot or memory (loading excluded).",
			[]float64{.001, .01, .1, .5, 1, 5, 10, 30, 60, 300}, "lane"),
	}
	reg.MustRegister(laneCollector{sched}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// factory registers each series as it is made.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

// laneCollector reads the scheduler's gauges at scrape time.
type laneCollector struct{ sched func() *Scheduler }

var (
	descWaiting = prometheus.NewDesc("edgectl_queue_waiting", "Requests waiting for a slot, a load or memory.", nil, nil)
	descLoaded  = prometheus.NewDesc("edgectl_models_loaded", "Models loaded per lane.", []string{"lane"}, nil)
	descBusy    = prometheus.NewDesc("edgectl_lane_busy", "Requests running per lane.", []string{"lane"}, nil)
	descMemory  = prometheus.NewDesc("edgectl_lane_memory_bytes", "Memory held by loaded and unloading models per lane.", []string{"lane"}, nil)
)

func (c laneCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descWaiting
	ch <- descLoaded
	ch <- descBusy
	ch <- descMemory
}

func (c laneCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.sched()
	if s == nil {
		return
	}
	waiting, loaded, busy, used := s.stats()
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(waiting))
	for lane := range loaded {
		ch <- prometheus.MustNewConstMetric(descLoaded, prometheus.GaugeValue, float64(loaded[lane]), lane)
		ch <- prometheus.MustNewConstMetric(descBusy, prometheus.GaugeValue, float64(busy[lane]), lane)
		ch <- prometheus.MustNewConstMetric(descMemory, prometheus.GaugeValue, float64(used[lane]), lane)
	}
}

// generation records one finished generation of a served model.
func (m *metrics) generation(model string, prompt, completion int, ttft, prefill, decode time.Duration, decodeTPS float64) {
	m.promptTokens.WithLabelValues(model).Add(float64(prompt))
	m.completionTokens.WithLabelValues(model).Add(float64(completion))
	m.prefillSeconds.WithLabelValues(model).Add(prefill.Seconds())
	m.decodeSeconds.WithLabelValues(model).Add(decode.Seconds())
	m.ttft.WithLabelValues(model).Observe(ttft.Seconds())
	if completion > 0 && decodeTPS > 0 {
		m.decodeTPS.WithLabelValues(model).Observe(decodeTPS)
	}
}

func (m *metrics) queued(lane string, d time.Duration) {
	m.queueWait.WithLabelValues(lane).Observe(d.Seconds())
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s.metricsHandler.ServeHTTP(w, r)
}

func newMetricsHandler(m *metrics) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// modelLabel is the model label for a request that named model: the served
// model's canonical name, or "unknown".
func (s *Server) modelLabel(model string) string {
	if model == "" {
		return unknownModel
	}
	e, ok := s.reg.get(model)
	if !ok || !utf8.ValidString(e.Name) {
		return unknownModel
	}
	return e.Name
}

// routeLabel is the route-table pattern that r matches (method aside), so
// the raw URL path never becomes a label; "other" when none does.
func (s *Server) routeLabel(r *http.Request) string {
	_, pattern := s.mux.Handler(r)
	if pattern == "" && r.Method != http.MethodPost && r.Method != http.MethodGet {
		// OPTIONS preflights and wrong methods: the route the path names.
		for _, m := range []string{http.MethodPost, http.MethodGet} {
			rr := *r
			rr.Method = m
			if _, pattern = s.mux.Handler(&rr); pattern != "" {
				break
			}
		}
	}
	if pattern == "" {
		return "other"
	}
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = p
	}
	if pattern == "/{$}" {
		pattern = "/"
	}
	return pattern
}

// reqNote is what a handler tells the metrics about its request.
type reqNote struct {
	model string // the model the request named ("" for none)
	code  int    // the status, when the status line does not tell it (0: it does)
}

type noteKey struct{}

// note records the model a request named and its outcome: code is the
// status sent, or the one the status line cannot carry (a stream that
// failed after its 200; 499 for a client that left).
func note(r *http.Request, model string, code int) {
	if n, _ := r.Context().Value(noteKey{}).(*reqNote); n != nil {
		n.model, n.code = clip.Text(model), code // the access log's line stays short
	}
}

// statusWriter remembers the status sent.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and the deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe counts every request (refused ones included) and its duration
// by route pattern, served model and status.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		n := &reqNote{}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), noteKey{}, n)))
		code := n.code
		if code == 0 {
			code = sw.code
		}
		if code == 0 {
			code = http.StatusOK
		}
		route, model := s.routeLabel(r), s.modelLabel(n.model)
		s.metrics.requests.WithLabelValues(route, model, strconv.Itoa(code)).Inc()
		s.metrics.duration.WithLabelValues(route, model).Observe(time.Since(start).Seconds())
	})
}
