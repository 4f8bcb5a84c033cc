package hub

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback:", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// An endpoint that refuses the connection fails at once — real time, the
// default retry policy — with one line naming the endpoint and the cause.
func TestRefusedEndpointFailsAtOnce(t *testing.T) {
	endpoint := "http://" + closedPort(t)
	c, err := NewClient(Config{Endpoint: endpoint, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var retries int
	start := time.Now()
	_, err = c.Snapshot(context.Background(), "acme/tiny", "main", SnapshotOptions{OnEvent: func(e progress.Event) {
		if e.Event == progress.Retry {
			retries++
		}
	}})
	took := time.Since(start)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	t.Logf("%v: %s", took, msg)
	if took > 5*time.Second || retries != 0 {
		t.Errorf("took %v with %d retries; a refused endpoint is not worth retrying", took, retries)
	}
	if errkind.Of(err) != errkind.Network || !strings.Contains(msg, endpoint) || !strings.Contains(msg, "connection refused") || strings.Contains(msg, "\n") {
		t.Errorf("want one network-kind line naming %s and the cause, got %q (kind %v)", endpoint, msg, errkind.Of(err))
	}
}

// Retried failures stop within the stated budget, and every wait is
// announced, the file listing's too (it used to wait silently).
func TestRetriesAreAnnouncedAndBounded(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	srv.SetFaults("config.json", hubtest.Faults{ServerErrors: 100})
	c, rec := newTestClient(t, srv, "")
	c.Retry.Attempts = 100
	c.Retry.Base, c.Retry.Max = 10*time.Second, 10*time.Second
	c.Retry.Deadline = 35 * time.Second
	_, err := c.Snapshot(t.Context(), repo.id, "main", SnapshotOptions{Include: []string{"config.json"}, OnEvent: rec.on})
	if err == nil || !strings.Contains(err.Error(), "retry budget") {
		t.Fatalf("want the budget named, got %v", err)
	}
	var waited time.Duration
	for _, d := range rec.sleeps {
		waited += d
	}
	if waited > c.Retry.Deadline || len(rec.sleeps) < 2 || rec.count(progress.Retry) != len(rec.sleeps) {
		t.Fatalf("waited %v in %d sleeps with %d retry events; budget %v", waited, len(rec.sleeps), rec.count(progress.Retry), c.Retry.Deadline)
	}
}

// The listing's own retries reach OnEvent (no silent wait before the first
// file).
func TestListingRetriesAreAnnounced(t *testing.T) {
	rec := &recorder{}
	ctx := withRetryEvents(context.Background(), "acme/x", rec.on)
	c := &Client{Retry: RetryPolicy{Attempts: 3, Sleep: rec.sleep}}
	tries := 0
	err := c.withRetry(ctx, "acme/x@main", nil, func() error {
		tries++
		return &transient{err: errString("reset")}
	})
	if err == nil || tries != 3 || rec.count(progress.Retry) != 2 {
		t.Fatalf("err %v, %d tries, %d retry events", err, tries, rec.count(progress.Retry))
	}
}

type errString string

func (e errString) Error() string { return string(e) }
