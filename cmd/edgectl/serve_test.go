package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/cli"
)

// syncBuffer is a bytes.Buffer safe to read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestServeRefusesOpenAddressWithoutKey(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:11434", ":8080"} {
		errOut := &bytes.Buffer{}
		code := run(context.Background(), &cli.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: errOut},
			[]string{"serve", "--models", "../../testdata/models", "--addr", addr, "--api-key", ""})
		if code != exitUsage || !strings.Contains(errOut.String(), "--api-key") {
			t.Errorf("%s: exit %d, %s", addr, code, errOut)
		}
	}
	errOut := &bytes.Buffer{}
	code := run(context.Background(), &cli.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: errOut}, []string{"serve", "--api-key", ""})
	if code != exitUsage || !strings.Contains(errOut.String(), "nothing to serve") {
		t.Errorf("no models: exit %d, %s", code, errOut)
	}
}

func TestServeAnswersAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &cli.IO{In: strings.NewReader(""), Out: out, ErrOut: errOut},
			[]string{"serve", "--json", "--models", "../../testdata/models", "--addr", "127.0.0.1:0", "--api-key", "k"})
	}()
	var ev struct {
		Event  string
		URL    string
		Models []map[string]string
	}
	deadline := time.Now().Add(10 * time.Second)
	for ev.URL == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no listening event; stderr: %s", errOut)
		}
		line, _, _ := strings.Cut(out.String(), "\n")
		json.Unmarshal([]byte(line), &ev)
		time.Sleep(20 * time.Millisecond)
	}
	if ev.Event != "listening" || len(ev.Models) == 0 {
		t.Fatalf("event %+v", ev)
	}
	resp, err := http.Get(ev.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v", err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, ev.URL+"/api/generate",
		strings.NewReader(`{"model":"tinystories-656k","prompt":"Once upon a time","stream":false,"options":{"num_predict":4,"temperature":0}}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"done":true`) {
		t.Fatalf("generate: %d %s", resp.StatusCode, b)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, errOut)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop on cancel")
	}
	if !strings.Contains(out.String(), `"event":"stopped"`) {
		t.Errorf("stdout %s", out)
	}
}
