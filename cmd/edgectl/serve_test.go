package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

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
	ev := serveJSON(t, "--models", "../../testdata/models", "--addr", "127.0.0.1:0", "--api-key", "k")
	if ev.Event != "listening" || len(ev.Models) == 0 {
		t.Fatalf("event %+v", ev.listening)
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
	if code := ev.Stop(); code != 0 {
		t.Errorf("exit %d: %s", code, ev.ErrOut)
	}
	if !strings.Contains(ev.Out.String(), `"event":"stopped"`) {
		t.Errorf("stdout %s", ev.Out)
	}
}
