package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// pool runs row ranges of a matrix product on a fixed set of goroutines.
// A persistent pool matters: decode dispatches ~200 products per token, and
// spawning goroutines for each costs more than the small ones take.
type pool struct {
	n    int
	work chan func()
	// mu lets close wait for products in flight: a Model closed while a
	// Session still generates finishes that step on the caller alone.
	mu     sync.RWMutex
	closed bool
}

func newPool(threads int) *pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &pool{n: threads}
	if threads > 1 {
		p.work = make(chan func(), threads)
		for range threads - 1 {
			go func() {
				for f := range p.work {
					f()
				}
			}()
		}
	}
	return p
}

// parallel calls f(lo, hi) on disjoint chunks covering [0, n), each a
// multiple of align rows (except the last). Workers and the caller pull
// chunks from a shared counter, so a core that is busy elsewhere (the
// machine is shared) just takes fewer chunks.
func (p *pool) parallel(n, align int, f func(lo, hi int)) {
	if align < 1 {
		align = 1
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.n == 1 || n < 2*align || p.closed {
		f(0, n)
		return
	}
	chunks := p.n * 4
	per := (n/chunks + align - 1) / align * align
	if per < align {
		per = align
	}
	total := (n + per - 1) / per
	var next atomic.Int64
	var wg sync.WaitGroup
	job := func() {
		for {
			c := int(next.Add(1) - 1)
			if c >= total {
				return
			}
			lo := c * per
			f(lo, min(lo+per, n))
		}
	}
	helpers := min(p.n-1, total-1)
	wg.Add(helpers)
	for range helpers {
		p.work <- func() { job(); wg.Done() }
	}
	job()
	wg.Wait()
}

func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.work != nil && !p.closed {
		close(p.work)
	}
	p.closed = true
}
