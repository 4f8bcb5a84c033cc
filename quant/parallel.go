package quant

import (
	"context"
	"sync"
)

// ordered runs work(i) for i in [0, n) on `workers` goroutines and hands
// the results to emit in index order. At most 2·workers results are in
// flight, which bounds memory to a few chunks whatever the tensor size.
func ordered[T any](ctx context.Context, workers, n int, work func(i int) (T, error), emit func(i int, v T) error) error {
	if n == 0 {
		return nil
	}
	workers = max(1, min(workers, n))
	ctx, cancel := context.WithCancel(ctx)
	type result struct {
		v   T
		err error
	}
	results := make([]chan result, n)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	window := make(chan struct{}, 2*workers)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				v, err := work(i)
				results[i] <- result{v, err}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := 0; i < n; i++ {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	// On any exit, stop the producer first, then wait for the workers
	// (their result channels are buffered, so they never block).
	defer func() { cancel(); wg.Wait() }()
	for i := 0; i < n; i++ {
		var r result
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if r.err != nil {
			return r.err
		}
		if err := emit(i, r.v); err != nil {
			return err
		}
		<-window
	}
	return nil
}
