package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// `pull` against a loopback port nothing listens on: a non-zero exit (15,
// network) within seconds, one line naming the endpoint and the cause. It
// once went on retrying silently for more than 20 s.
func TestPullRefusedEndpointFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback:", err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close()
	t.Setenv("HF_ENDPOINT", endpoint)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	start := time.Now()
	code, _, stderr := runCLI(t, "pull", "org/name")
	took := time.Since(start)
	t.Logf("exit %d in %v: %s", code, took, stderr)
	if code != exitNetwork || took > 10*time.Second {
		t.Fatalf("exit %d in %v, want %d within 10s", code, took, exitNetwork)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, endpoint) || !strings.Contains(stderr, "refused") {
		t.Fatalf("want one line naming %s and the cause, got %q", endpoint, stderr)
	}
}
