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

// poolJob is one product. Its rows are split into one contiguous lane
// per thread, so each core streams one sequential run of weights (the
// hardware prefetchers follow it; chunks scattered over the matrix cost
// each core a ramp-up per chunk). A thread claims chunks from the front
// of its own lane; once that is empty it steals chunks from the back of
// the others, so a core that is busy elsewhere (the machine is shared)
// just ends up with fewer rows. Rows finished are counted in done. Each
// product has its own job, so a worker that arrives late finds nothing
// left to claim instead of touching the next product.
type poolJob struct {
	f               func(lo, hi int)
	n, align, chunk int
	lanes           []poolLane
	done            atomic.Int64
}

// poolLane is rows [lo, hi) not yet claimed, packed in one word so front
// and back claims race through a single compare-and-swap.
type poolLane struct {
	r atomic.Uint64
	_ [56]byte // one cache line per lane
}

func packLane(lo, hi int) uint64       { return uint64(lo)<<32 | uint64(hi) }
func unpackLane(v uint64) (lo, hi int) { return int(v >> 32), int(v & (1<<32 - 1)) }

// claim takes rows from the front (own lane: up to chunk) or the back
// (stealing).
func (j *poolJob) claim(l *poolLane, front bool) (lo, hi int, ok bool) {
	for {
		v := l.r.Load()
		a, b := unpackLane(v)
		if a >= b {
			return 0, 0, false
		}
		// Either end takes at most half of what is left (in whole
		// units): the owner's pieces shrink near the end of its lane and
		// a thief takes half at once, so the two meet at nearly the same
		// moment (measured: ~1 µs less per product than fixed chunks).
		half := max(1, (b-a+j.align-1)/j.align/2) * j.align
		if front {
			lo, hi = a, min(a+min(j.chunk, half), b)
			if l.r.CompareAndSwap(v, packLane(hi, b)) {
				return lo, hi, true
			}
		} else {
			// The last unit of the last lane may be short: back
			// pieces end at b but start on a unit boundary.
			lo, hi = max(a, (b-1)/j.align*j.align+j.align-half), b
			if l.r.CompareAndSwap(v, packLane(a, lo)) {
				return lo, hi, true
			}
		}
	}
}

// work runs lane id's rows, then helps with the other lanes.
func (j *poolJob) work(id int) {
	own := &j.lanes[id%len(j.lanes)]
	for {
		lo, hi, ok := j.claim(own, true)
		if !ok {
			break
		}
		j.f(lo, hi)
		j.done.Add(int64(hi - lo))
	}
	for i := 1; i < len(j.lanes); i++ {
		l := &j.lanes[(id+i)%len(j.lanes)]
		for {
			lo, hi, ok := j.claim(l, false)
			if !ok {
				break
			}
			j.f(lo, hi)
			j.done.Add(int64(hi - lo))
		}
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
		for id := 1; id < threads; id++ {
			go p.worker(id)
		}
	}
	return p
}

// worker id runs lane id of each product (the caller runs lane 0).
func (p *pool) worker(id int) {
	var last *poolJob
	for {
		if j := p.cur.Load(); j != nil && j != last {
			last = j
			j.work(id)
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

// parallel calls f(lo, hi) on disjoint chunks covering [0, n), each
// starting at a multiple of align rows. The caller and the workers each
// run their own lane of rows and then steal from the others' (poolJob).
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
	// Lanes are equal shares of whole align-row units; chunks are 1/8 of
	// a lane (at least align rows), the unit a late core can steal.
	units := (n + align - 1) / align
	j := &poolJob{f: f, n: n, align: align, lanes: make([]poolLane, p.n)}
	j.chunk = max(1, units/(p.n*8)) * align
	for i := range j.lanes {
		j.lanes[i].r.Store(packLane(min(n, units*i/p.n*align), min(n, units*(i+1)/p.n*align)))
	}
	p.cur.Store(j)
	if s := int(p.sleeping.Load()); s > 0 {
		for range s {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	}
	j.work(0)
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
