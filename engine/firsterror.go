package engine

import "sync"

// FirstError keeps why a model in another process or server can serve no
// more (what its Pinger's Alive returns): the first error a lane marks it
// with, since what comes after (the pipe a kill closed, "model closed" on
// the way out) follows from it and says less. The zero value holds none;
// it is safe for concurrent use.
type FirstError struct {
	mu  sync.Mutex
	err error
}

// Keep records err unless an error is kept already.
func (f *FirstError) Keep(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

// Err is the kept error, nil while none was.
func (f *FirstError) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
