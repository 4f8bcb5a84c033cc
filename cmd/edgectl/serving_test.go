package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/cli"
)

// serving is `edgectl serve --json` running in this test's process.
type serving struct {
	listening
	Out, ErrOut *syncBuffer // what it printed so far
	stop        func() int
}

// listening is serve's first --json line.
type listening struct {
	Event  string
	URL    string
	Auth   bool
	Models []map[string]string
}

// serveJSON runs `edgectl serve --json args...` until its listening event
// (failing t when it exits or says nothing for 30 s). The server stops at
// Stop, or when the test ends.
func serveJSON(t *testing.T, args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{Out: &syncBuffer{}, ErrOut: &syncBuffer{}}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &cli.IO{In: strings.NewReader(""), Out: s.Out, ErrOut: s.ErrOut},
			append([]string{"serve", "--json"}, args...))
	}()
	s.stop = sync.OnceValue(func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop within 15 s of its context's end")
			return -1
		}
	})
	t.Cleanup(func() { s.stop() })
	for deadline := time.Now().Add(30 * time.Second); s.URL == ""; time.Sleep(20 * time.Millisecond) {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before listening: %s", code, s.ErrOut)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening event within 30 s; stderr: %s", s.ErrOut)
		}
		line, _, _ := strings.Cut(s.Out.String(), "\n")
		json.Unmarshal([]byte(line), &s.listening)
	}
	return s
}

// Stop ends the server and returns its exit code.
func (s *serving) Stop() int { return s.stop() }
