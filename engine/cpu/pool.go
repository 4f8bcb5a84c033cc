package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pool runs row ranges of a matrix product on a fixed set of goroutines.
// A persistent pool matters: decode dispatches ~150 products per token,
// each taking 20–300 µs, with a few µs of serial work between them. So
// idle workers first spin on the published job for a short while (waking
// a parked goroutine costs tens of µs, a large share of a small product)
// and only then park until the next product.
type pool struct {
	n int
	// mu lets close wait for products in flight: a Model closed while a
	// Session still generates finishes that step on the caller alone.
	mu     sync.RWMutex
	closed atomic.Bool
	cur    atomic.Pointer[poolJob] // the latest product; workers help with it
	// Parked workers wait on wake; sleeping counts them so parallel only
	// signals when someone is parked.
	sleeping atomic.Int32
	wake     chan struct{}
}

// poolJob is one product: rows are claimed from next in shrinking chunks
// (guided scheduling: a share of what is left, down to min rows) and
// counted in done when finished, so the two threads finish a product at
// nearly the same moment. Each product has its own job, so a worker that
// arrives late finds nothing left to claim instead of touching the next
// product.
type poolJob struct {
	f                   func(lo, hi int)
	n, align, min, ways int
	next                atomic.Int64
	done                atomic.Int64
}

// work claims and runs chunks until none is left.
func (j *poolJob) work() {
	for {
		lo := int(j.next.Load())
		if lo >= j.n {
			return
		}
		size := (j.n-lo)/j.ways + j.align - 1
		size = max(j.min, size/j.align*j.align)
		hi := min(lo+size, j.n)
		if !j.next.CompareAndSwap(int64(lo), int64(hi)) {
			continue
		}
		j.f(lo, hi)
		j.done.Add(int64(hi - lo))
	}
}

// spinFor is how long an idle worker polls for the next product before
// parking.
const spinFor = 300 * time.Microsecond

func newPool(threads int) *pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &pool{n: threads}
	if threads > 1 {
		p.wake = make(chan struct{}, threads)
		for range threads - 1 {
			go p.worker()
		}
	}
	return p
}

func (p *pool) worker() {
	var last *poolJob
	for {
		if j := p.cur.Load(); j != nil && j != last {
			last = j
			j.work()
			continue
		}
		if p.closed.Load() {
			return
		}
		// Spin, checking the clock only every few hundred polls.
		start := time.Now()
		for i := 1; ; i++ {
			if j := p.cur.Load(); (j != nil && j != last) || p.closed.Load() {
				break
			}
			if i%256 == 0 {
				if time.Since(start) > spinFor {
					p.park(last)
					break
				}
				runtime.Gosched()
			}
		}
	}
}

// park blocks until a product newer than last is published (or the pool
// closes). sleeping is raised before the final check, and parallel reads
// it after publishing, so one of the two always sees the other.
func (p *pool) park(last *poolJob) {
	p.sleeping.Add(1)
	defer p.sleeping.Add(-1)
	for {
		if j := p.cur.Load(); (j != nil && j != last) || p.closed.Load() {
			return
		}
		<-p.wake
	}
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
	if p.n == 1 || n < 2*align || p.closed.Load() {
		f(0, n)
		return
	}
	// Chunks start at 1/(2·threads) of what is left and shrink to 1/16 of
	// a thread's share (at least align rows).
	minRows := max(align, (n/(p.n*16)+align-1)/align*align)
	j := &poolJob{f: f, n: n, align: align, min: minRows, ways: 2 * p.n}
	p.cur.Store(j)
	if s := int(p.sleeping.Load()); s > 0 {
		for range s {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	}
	j.work()
	// Wait for chunks other workers are still running.
	for i := 1; j.done.Load() < int64(j.n); i++ {
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
	// Drop the finished job (unless another caller already published
	// one) so the pool does not keep its closure and buffers alive.
	p.cur.CompareAndSwap(j, nil)
}

func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wake != nil && !p.closed.Load() {
		p.closed.Store(true)
		close(p.wake)
	}
	p.closed.Store(true)
}
