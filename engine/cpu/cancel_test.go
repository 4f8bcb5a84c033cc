//go:build unix

package cpu

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/tokenizer"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// Work abandoned by its caller (serve's watchdog, a client that hung up)
// stops: Generate returns soon after the cancel, whether it was
// tokenizing a megabyte, matching a hostile regex or in a long prefill,
// and afterwards no goroutine is left and the process is idle.
func TestCancelStopsGenerate(t *testing.T) {
	slow := t.TempDir() // big enough that a 3000-token prefill takes seconds
	if err := testmodel.Write(slow, testmodel.Spec{Hidden: 256, FFN: 1024, Layers: 8, Heads: 8, KVHeads: 4, Vocab: 2048,
		Config: map[string]any{"max_position_embeddings": 8192}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyFile(t, filepath.Join(tinyStories, n), filepath.Join(slow, n))
	}
	redos := hostileCopy(t, map[string]map[string]any{"tokenizer.json": {
		"pre_tokenizer": map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "(a+)+$"}, "behavior": "Isolated"}}})
	story := "Once upon a time, there was a little girl named Lily. She liked to play in the park with her dog. "
	cases := []struct {
		name, model, prompt string
		cancelAfter         time.Duration
		within              time.Duration // after the cancel
		want                error
	}{
		// One BPE word of half a megabyte (TinyStories' tokenizer has no
		// pre-tokenizer): seconds of merging. It must fit the 8192-token
		// context by its byte length, or it is refused before tokenizing
		// (promptbound.go).
		{"tokenizing 500 KB", slow, strings.Repeat(story, 5000), 20 * time.Millisecond, 500 * time.Millisecond, context.Canceled},
		// A match that never ends on its own: stopped by the match
		// timeout (1 s), the only bound a running regexp2 match has; the
		// cancel is what Generate reports.
		{"hostile regex", redos, strings.Repeat("a", 5000) + "!", 100 * time.Millisecond, 2 * time.Second, context.Canceled},
		{"long prefill", slow, strings.Repeat(story, 130), 300 * time.Millisecond, 500 * time.Millisecond, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loadModel(t, c.model)
			s, err := m.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			runtime.GC()
			baseline := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			at := make(chan time.Time, 1)
			time.AfterFunc(c.cancelAfter, func() { at <- time.Now(); cancel() })
			_, err = s.Generate(ctx, engine.Request{Prompt: c.prompt, MaxTokens: 4}, func(engine.Token) error { return nil })
			late := time.Since(<-at)
			t.Logf("%v, %v after the cancel", err, late)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if late > c.within*timeScale {
				t.Errorf("returned %v after the cancel, want within %v", late, c.within)
			}
			waitGoroutines(t, baseline)
			if used := cpuTimeOver(300 * time.Millisecond); used > 100*time.Millisecond {
				t.Errorf("the process used %v of CPU in 300 ms after Generate returned", used)
			}
		})
	}
}

// waitGoroutines waits for the goroutine count to come back to baseline.
// regexp2's timeout clock goroutine lives about a second past its last
// deadline, hence the patience.
func waitGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cpuTimeOver is the CPU time this process uses over the next d.
func cpuTimeOver(d time.Duration) time.Duration {
	var a, b syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &a)
	time.Sleep(d)
	syscall.Getrusage(syscall.RUSAGE_SELF, &b)
	tv := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return tv(b) - tv(a)
}

// Without a cancel, the hostile regex fails the request by itself after
// the match timeout, with the tokenizer's error.
func TestHostileRegexFailsGenerate(t *testing.T) {
	dir := hostileCopy(t, map[string]map[string]any{"tokenizer.json": {
		"pre_tokenizer": map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "(a+)+$"}, "behavior": "Isolated"}}})
	m := loadModel(t, dir)
	s, _ := m.NewSession()
	start := time.Now()
	_, err := s.Generate(context.Background(), engine.Request{Prompt: strings.Repeat("a", 5000) + "!", MaxTokens: 4}, func(engine.Token) error { return nil })
	if !errors.Is(err, tokenizer.ErrRegexTimeout) || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Fatalf("got %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v", took)
	}
}
