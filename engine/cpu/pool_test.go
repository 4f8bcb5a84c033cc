package cpu

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolCoversEveryRowOnce: lanes and steals together run each row
// exactly once, in chunks that start on align boundaries.
func TestPoolCoversEveryRowOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 4} {
		p := newPool(threads)
		for _, n := range []int{0, 1, 5, 16, 17, 100, 1000, 4099} {
			for _, align := range []int{1, 4, 16, 64} {
				seen := make([]atomic.Int32, n)
				p.parallel(n, align, func(lo, hi int) {
					if lo%align != 0 && lo != 0 {
						t.Errorf("threads %d n %d align %d: chunk starts at %d", threads, n, align, lo)
					}
					for i := lo; i < hi; i++ {
						seen[i].Add(1)
					}
				})
				for i := range seen {
					if c := seen[i].Load(); c != 1 {
						t.Fatalf("threads %d n %d align %d: row %d ran %d times", threads, n, align, i, c)
					}
				}
			}
		}
		p.close()
	}
}

// TestPoolStealsFromAStalledLane: while the worker is stuck in the first
// chunk of its lane, the caller finishes its own lane and then takes the
// rest of the worker's lane from the back; the stuck chunk is released
// only once those rows are done, so without stealing this deadlocks.
func TestPoolStealsFromAStalledLane(t *testing.T) {
	p := newPool(2)
	defer p.close()
	const n = 64 // lanes [0, 32) and [32, 64); chunks of 4
	var back atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	finished := make(chan struct{})
	go func() {
		p.parallel(n, 1, func(lo, hi int) {
			if lo == 32 {
				select {
				case <-release:
				case <-time.After(10 * time.Second):
					t.Error("rows 36–63 were never stolen while rows 32–35 were stuck")
				}
				return
			}
			if lo >= 36 && back.Add(int32(hi-lo)) == n-36 {
				once.Do(func() { close(release) })
			}
		})
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		t.Fatal("parallel did not finish")
	}
}
