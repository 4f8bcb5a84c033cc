package testbin

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// What a writer puts in the pipe comes back from read; a pipe nobody
// wrote to leaves no reader blocked in open after its test.
func TestFIFO(t *testing.T) {
	before := runtime.NumGoroutine()
	p := filepath.Join(t.TempDir(), "pipe")
	read := FIFO(t, p)
	if err := os.WriteFile(p, []byte("streamed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(10 * time.Second); string(got) != "streamed" {
		t.Fatalf("read %q, want %q", got, "streamed")
	}
	if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s is no longer a FIFO (%v)", p, err)
	}

	t.Run("unwritten", func(t *testing.T) { FIFO(t, filepath.Join(t.TempDir(), "pipe")) })
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after the FIFOs' tests, %d before: a reader is still waiting", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
