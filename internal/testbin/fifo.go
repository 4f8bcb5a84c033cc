package testbin

import (
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// FIFO makes a named pipe at path and starts its reader (a writer's open
// blocks until there is one). The returned read waits up to d for what was
// written by the time the writer closed the pipe, failing t when the reader
// got nothing. It skips t where mkfifo is refused. A reader left waiting
// because the test ended before writing is released at cleanup.
func FIFO(t testing.TB, path string) (read func(d time.Duration) []byte) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	type result struct {
		b   []byte
		err error
	}
	got, done := make(chan result, 1), make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.Open(path)
		if err != nil {
			got <- result{err: err}
			return
		}
		b, err := io.ReadAll(f)
		f.Close()
		got <- result{b, err}
	}()
	t.Cleanup(func() {
		// Opening for writing without blocking succeeds once the reader
		// waits in open (it may not be there yet); closing at once gives
		// it end of file.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			select {
			case <-done:
				return
			default:
			}
			if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	})
	return func(d time.Duration) []byte {
		t.Helper()
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("the reader of the FIFO %s: %v", path, r.err)
			}
			return r.b
		case <-time.After(d):
			t.Fatalf("the reader of the FIFO %s got nothing within %v", path, d)
			return nil
		}
	}
}
