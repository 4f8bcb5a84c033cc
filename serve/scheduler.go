package serve

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// LaneConfig bounds one lane: how much memory its loaded models may hold,
// how many requests it runs at once, how many models it keeps loaded.
type LaneConfig struct {
	BudgetMB  int64  `json:"budget_mb,omitempty"`  // 0: no memory bound
	Parallel  int    `json:"parallel,omitempty"`   // concurrent requests across the lane (default 1)
	MaxLoaded int    `json:"max_loaded,omitempty"` // 0: bounded by memory only
	Threads   int    `json:"threads,omitempty"`    // CPU lane: threads per model (0: all cores)
	Mmap      bool   `json:"mmap,omitempty"`       // CPU lane: serve weights from the file mapping (see engine.LoadOptions)
	Head      string `json:"head,omitempty"`       // CPU lane: LM head as "q4x", "q3x", "q2x", "q4", "q8" or "float" ("" auto)
	Context   int    `json:"ctx,omitempty"`        // CPU lane: KV context per model (0: the model's own, bounded by memory)
	// ChatFallback renders chat for models without a chat template with a
	// plain "Role: text" template (the CPU lane); lanes whose backend
	// templates itself (the vendor runtime, upstreams) leave it off.
	ChatFallback bool `json:"-"`
}

// Errors the scheduler returns; the HTTP layer maps them to statuses.
var (
	ErrQueueFull = errors.New("server busy, please try again.  maximum pending requests exceeded")
	ErrWatchdog  = errors.New("watchdog: the model stopped producing tokens")
)

type lane struct {
	name    string
	eng     engine.Engine
	cfg     LaneConfig
	busy    int
	closing map[*runner]bool // unloading: memory still held
}

type runner struct {
	entry     *Entry
	lane      *lane
	model     engine.Model
	size      int64
	loading   bool
	refs      int // requests holding it (the loader counts as one)
	lastUsed  time.Time
	keepAlive time.Duration
	expiresAt time.Time
	loadedAt  time.Time // when the load finished (/health's "since")
	timer     *time.Timer
	gen       uint64 // bumped on every use, so stale expiry timers do nothing
}

// Scheduler places requests on lanes: it loads models on demand within each
// lane's memory budget, evicts idle ones least-recently-used first, expires
// them after keep_alive, bounds concurrency per lane and the queue of
// requests waiting for a slot or a load.
type Scheduler struct {
	mu        sync.Mutex
	lanes     map[string]*lane
	runners   map[string]*runner
	waiting   int
	maxQueue  int
	changed   chan struct{}
	keepAlive time.Duration
	loadOpts  func(*lane) engine.LoadOptions
	engines   map[string]engine.Engine // by name, for entries on a lane of another engine
	closed    bool

	logf    func(format string, args ...any)
	metrics *metrics
	unloads sync.WaitGroup
}

func newScheduler(lanes map[string]*lane, maxQueue int, keepAlive time.Duration, logf func(string, ...any), m *metrics) *Scheduler {
	return &Scheduler{lanes: lanes, runners: map[string]*runner{}, maxQueue: maxQueue, keepAlive: keepAlive,
		changed: make(chan struct{}), logf: logf, metrics: m}
}

// broadcast wakes every waiter; callers hold mu.
func (s *Scheduler) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Lease is a request's hold on a loaded model and one lane slot.
type Lease struct {
	Model        engine.Model
	Lane         string
	Queued       time.Duration // waiting for a slot, a load or memory
	LoadDuration time.Duration // loading the model for this request
	ChatFallback bool
	s            *Scheduler
	r            *runner
	released     bool
}

// Acquire waits until entry's model is loaded and its lane has a free slot.
// keepAlive (nil: the default) becomes the model's keep-alive.
func (s *Scheduler) Acquire(ctx context.Context, e *Entry, keepAlive *time.Duration) (*Lease, error) {
	start := time.Now()
	var loadTime time.Duration
	ln := s.lanes[e.Lane]
	if ln == nil {
		return nil, fmt.Errorf("model %s needs the %s lane, which is not enabled (see `edgectl serve --help`)", e.Name, e.Lane)
	}
	waited := false
	s.mu.Lock()
	defer func() {
		if waited {
			s.waiting--
		}
		s.mu.Unlock()
	}()
	for {
		if s.closed {
			return nil, errors.New("server shutting down")
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := s.runners[e.Name]
		switch {
		case r != nil && !r.loading:
			if a, ok := r.model.(engine.Pinger); ok && r.refs == 0 {
				if err := a.Alive(); err != nil { // died while idle: start over
					s.unloadLocked(r, fmt.Sprintf("backend died while idle: %v", err))
					continue
				}
			}
			if ln.busy < max(ln.cfg.Parallel, 1) {
				ln.busy++
				r.refs++
				r.gen++
				if r.timer != nil {
					r.timer.Stop()
					r.timer = nil
				}
				r.keepAlive = s.keepAlive
				if keepAlive != nil {
					r.keepAlive = *keepAlive
				}
				queued := time.Since(start) - loadTime
				s.metrics.queued(ln.name, queued)
				return &Lease{Model: r.model, Lane: ln.name, Queued: queued, LoadDuration: loadTime,
					ChatFallback: ln.cfg.ChatFallback, s: s, r: r}, nil
			}
		case r == nil:
			fit, afterFrees := s.fits(ln, e.Size)
			if fit {
				t0 := time.Now()
				err := s.load(ctx, ln, e)
				loadTime += time.Since(t0)
				if err != nil {
					return nil, err
				}
				continue
			}
			if !afterFrees && s.evictOne(ln) {
				continue
			}
		}
		// Wait for a slot, a load, or memory.
		if !waited {
			if s.waiting >= s.maxQueue {
				s.metrics.rejected.Add(1)
				return nil, ErrQueueFull
			}
			s.waiting++
			waited = true
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			return nil, ctx.Err()
		}
	}
}

// fits reports whether a model of size fits the lane now, and if not,
// whether it will once the unloads in progress finish.
func (s *Scheduler) fits(ln *lane, size int64) (now, afterFrees bool) {
	var used, freeing int64
	count, closing := 0, 0
	for _, r := range s.runners {
		if r.lane == ln {
			used += r.size
			count++
		}
	}
	for r := range ln.closing {
		used += r.size
		freeing += r.size
		closing++
	}
	ok := func(used int64, count int) bool {
		if count == 0 {
			return true // a model larger than the budget still gets the lane to itself
		}
		if ln.cfg.MaxLoaded > 0 && count >= ln.cfg.MaxLoaded {
			return false
		}
		return ln.cfg.BudgetMB <= 0 || used+size <= ln.cfg.BudgetMB<<20
	}
	return ok(used, count+closing), ok(used-freeing, count)
}

// load loads e with mu held on entry and exit (released while loading).
func (s *Scheduler) load(ctx context.Context, ln *lane, e *Entry) error {
	r := &runner{entry: e, lane: ln, size: e.Size, loading: true, refs: 1}
	s.runners[e.Name] = r
	s.mu.Unlock()
	s.logf("loading %s on the %s lane", e.Name, ln.name)
	t0 := time.Now()
	var opts engine.LoadOptions
	if s.loadOpts != nil {
		opts = s.loadOpts(ln)
	}
	// The load outlives a client that gives up: the next request for the
	// model (or the one queued behind it) finds it ready instead of
	// starting a slow vendor runtime over again.
	eng := ln.eng
	if e.Engine != "" && s.engines[e.Engine] != nil {
		eng = s.engines[e.Engine]
	}
	m, err := safeLoad(context.WithoutCancel(ctx), eng, e.Path, opts, s.logf)
	s.mu.Lock()
	r.loading = false
	r.refs--
	defer s.broadcast()
	if err != nil {
		delete(s.runners, e.Name)
		s.metrics.loadFailures.Add(1)
		return &LoadError{Model: e.Name, Err: err}
	}
	r.model = m
	if sz := m.Info().SizeBytes; sz > 0 {
		r.size = sz
	}
	r.lastUsed = time.Now()
	r.loadedAt = r.lastUsed
	s.metrics.loads.Add(1)
	s.logf("loaded %s in %v (%d MiB)", e.Name, time.Since(t0).Round(time.Millisecond), r.size>>20)
	if s.closed {
		s.unloadLocked(r, "shutdown")
	}
	return nil
}

// LoadError is a model that failed to load (a server-side 500).
type LoadError struct {
	Model string
	Err   error
}

func (e *LoadError) Error() string { return fmt.Sprintf("loading %s: %v", e.Model, e.Err) }
func (e *LoadError) Unwrap() error { return e.Err }

// evictOne unloads the least recently used idle model of the lane.
func (s *Scheduler) evictOne(ln *lane) bool {
	var idle []*runner
	for _, r := range s.runners {
		if r.lane == ln && !r.loading && r.refs == 0 {
			idle = append(idle, r)
		}
	}
	if len(idle) == 0 {
		return false
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].lastUsed.Before(idle[j].lastUsed) })
	s.metrics.evictions.Add(1)
	s.unloadLocked(idle[0], "evicted to make room")
	return true
}

// unloadLocked removes r from service and closes it in the background; its
// memory counts against the lane until Close returns.
func (s *Scheduler) unloadLocked(r *runner, why string) {
	if s.runners[r.entry.Name] == r {
		delete(s.runners, r.entry.Name)
	}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.lane.closing[r] = true
	s.unloads.Add(1)
	go func() {
		defer s.unloads.Done()
		err := r.model.Close()
		s.mu.Lock()
		delete(r.lane.closing, r)
		s.broadcast()
		s.mu.Unlock()
		if err != nil {
			s.metrics.unloadErrors.Add(1)
			s.logf("unloading %s: %v", r.entry.Name, err)
		} else {
			s.logf("unloaded %s (%s)", r.entry.Name, why)
		}
	}()
	s.broadcast()
}

// Release gives the slot back and starts the keep-alive clock.
func (l *Lease) Release() {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.released {
		return
	}
	l.released = true
	r := l.r
	r.lane.busy--
	r.refs--
	r.lastUsed = time.Now()
	defer s.broadcast()
	if s.runners[r.entry.Name] != r {
		return // killed or unloaded while in use
	}
	if a, ok := r.model.(engine.Pinger); ok {
		if err := a.Alive(); err != nil {
			s.unloadLocked(r, fmt.Sprintf("backend died: %v", err))
			return
		}
	}
	if r.refs > 0 {
		return
	}
	s.scheduleExpiry(r)
}

func (s *Scheduler) scheduleExpiry(r *runner) {
	switch ka := r.keepAlive; {
	case ka <= 0:
		s.unloadLocked(r, "keep_alive 0")
	case ka == api.Forever:
		r.expiresAt = time.Time{}
	default:
		r.expiresAt = time.Now().Add(ka)
		gen := r.gen
		r.timer = time.AfterFunc(ka, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.runners[r.entry.Name] == r && r.refs == 0 && r.gen == gen {
				s.unloadLocked(r, "keep_alive expired")
			}
		})
	}
}

// Kill takes the lease's model out of service at once (the watchdog): it is
// closed in the background, which ends the stuck process, and reloaded so
// later requests find it ready.
func (l *Lease) Kill(why string) {
	s := l.s
	s.mu.Lock()
	if s.runners[l.r.entry.Name] == l.r {
		s.unloadLocked(l.r, why)
	}
	closed := s.closed
	s.mu.Unlock()
	s.metrics.watchdogKills.Add(1)
	if !closed {
		go s.Preload(context.Background(), l.r.entry, nil)
	}
}

// Discard takes the lease's model out of service without reloading it (an
// engine that panicked: its state is not to be trusted).
func (l *Lease) Discard(why string) {
	s := l.s
	s.mu.Lock()
	if s.runners[l.r.entry.Name] == l.r {
		s.unloadLocked(l.r, why)
	}
	s.mu.Unlock()
}

// Preload loads e without serving a request (Ollama's empty-prompt load,
// and the watchdog's restart).
func (s *Scheduler) Preload(ctx context.Context, e *Entry, keepAlive *time.Duration) (*Lease, error) {
	l, err := s.Acquire(ctx, e, keepAlive)
	if err != nil {
		return nil, err
	}
	l.Release()
	return l, nil
}

// Unload expires e now if it is loaded and idle, or when its last request
// ends. It reports whether e was loaded.
func (s *Scheduler) Unload(e *Entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runners[e.Name]
	if r == nil {
		return false
	}
	r.keepAlive = 0
	if r.refs == 0 && !r.loading {
		s.unloadLocked(r, "keep_alive 0")
	}
	return true
}

// Loaded describes a loaded model for /api/ps.
type Loaded struct {
	Entry     *Entry
	Info      engine.ModelInfo
	Lane      string
	Size      int64
	ExpiresAt time.Time // zero: never
	Busy      bool
	Since     time.Time // loaded at
}

// Loaded lists the models in memory.
func (s *Scheduler) Loaded() []Loaded {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Loaded
	for _, r := range s.runners {
		if r.loading {
			continue
		}
		exp := r.expiresAt
		if r.refs > 0 && r.keepAlive != api.Forever {
			exp = time.Now().Add(r.keepAlive)
		}
		out = append(out, Loaded{Entry: r.entry, Info: r.model.Info(), Lane: r.lane.name, Size: r.size, ExpiresAt: exp, Busy: r.refs > 0, Since: r.loadedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entry.Name < out[j].Entry.Name })
	return out
}

// Info returns the loaded model's info for e, if loaded.
func (s *Scheduler) Info(e *Entry) (engine.ModelInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runners[e.Name]; r != nil && !r.loading {
		return r.model.Info(), true
	}
	return engine.ModelInfo{}, false
}

// stats for /metrics.
func (s *Scheduler) stats() (waiting int, loaded map[string]int, busy map[string]int, used map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	loaded, busy, used = map[string]int{}, map[string]int{}, map[string]int64{}
	for name, ln := range s.lanes {
		loaded[name], busy[name], used[name] = 0, ln.busy, 0
		for r := range ln.closing {
			used[name] += r.size
		}
	}
	for _, r := range s.runners {
		loaded[r.lane.name]++
		used[r.lane.name] += r.size
	}
	return s.waiting, loaded, busy, used
}

// Close unloads everything and waits for the backends to stop.
func (s *Scheduler) Close() {
	s.mu.Lock()
	s.closed = true
	for _, r := range s.runners {
		if !r.loading {
			s.unloadLocked(r, "shutdown")
		}
	}
	s.mu.Unlock()
	s.unloads.Wait()
}
