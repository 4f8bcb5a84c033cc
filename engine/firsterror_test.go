package engine

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// The first error kept wins over every later one, also when lanes mark it
// from many goroutines at once (go test -race).
func TestFirstErrorKeepsTheFirst(t *testing.T) {
	var f FirstError
	if err := f.Err(); err != nil {
		t.Fatalf("zero value holds %v, want none", err)
	}
	first := errors.New("the runtime exited")
	f.Keep(first)
	f.Keep(errors.New("model closed"))
	if err := f.Err(); err != first {
		t.Fatalf("kept %v, want %v", err, first)
	}

	var g FirstError
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { g.Keep(fmt.Errorf("error %d", i)) })
	}
	wg.Wait()
	kept := g.Err()
	if kept == nil {
		t.Fatal("nothing kept after eight marks")
	}
	g.Keep(errors.New("late"))
	if g.Err() != kept {
		t.Fatalf("a later mark replaced %v with %v", kept, g.Err())
	}
}
