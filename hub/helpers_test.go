package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/progress"
)

// testRepo is a small model repository: two regular files (one nested) and
// an LFS weight file big enough to span many reads.
type testRepo struct {
	id      string
	commit  string
	config  []byte
	tok     []byte
	weights hubtest.Content
}

const weightsSize = 3<<20 + 12345

func addTestRepo(t *testing.T, srv *hubtest.Server, id string) *testRepo {
	t.Helper()
	r := &testRepo{
		id:      id,
		config:  []byte(`{"architectures":["LlamaForCausalLM"],"hidden_size":64}` + "\n"),
		tok:     []byte(`{"model":{"type":"BPE"}}`),
		weights: hubtest.Generated(7, weightsSize),
	}
	_, r.commit = srv.AddRepo(id,
		&hubtest.File{Path: "config.json", Content: hubtest.Bytes(r.config)},
		&hubtest.File{Path: "tokenizer/sub dir/tokenizer.json", Content: hubtest.Bytes(r.tok)},
		&hubtest.File{Path: "model.safetensors", Content: r.weights, LFS: true},
	)
	return r
}

func contentBytes(t *testing.T, c hubtest.Content) []byte {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// recorder collects events and the delays the client asked to sleep.
type recorder struct {
	mu     sync.Mutex
	events []progress.Event
	sleeps []time.Duration
}

func (r *recorder) on(e progress.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.sleeps = append(r.sleeps, d)
	r.mu.Unlock()
	return ctx.Err()
}

func (r *recorder) count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Event == kind {
			n++
		}
	}
	return n
}

// newTestClient returns a client for srv over a fresh cache, with retries
// that do not wait (the delays asked for are recorded instead).
func newTestClient(t *testing.T, srv *hubtest.Server, cacheDir string) (*Client, *recorder) {
	t.Helper()
	if cacheDir == "" {
		cacheDir = t.TempDir()
	}
	c, err := NewClient(Config{Endpoint: srv.URL(), CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c.Retry = RetryPolicy{Attempts: 4, Sleep: rec.sleep}
	return c, rec
}

func mustSnapshot(t *testing.T, c *Client, repo, rev string, opts SnapshotOptions) *Snapshot {
	t.Helper()
	snap, err := c.Snapshot(context.Background(), repo, rev, opts)
	if err != nil {
		t.Fatalf("Snapshot(%s@%s): %v", repo, rev, err)
	}
	return snap
}

// hfRead reads a file from a cache the way huggingface_hub's
// try_to_load_from_cache does, independently of package hub: refs/<rev>
// gives the commit unless rev is one, then snapshots/<commit>/<file>.
func hfRead(t *testing.T, cacheDir, repo, rev, file string) []byte {
	t.Helper()
	folder := filepath.Join(cacheDir, "models--"+strings.ReplaceAll(repo, "/", "--"))
	commit := rev
	if len(rev) != 40 {
		b, err := os.ReadFile(filepath.Join(folder, "refs", rev))
		if err != nil {
			t.Fatalf("refs/%s: %v", rev, err)
		}
		if bytes.ContainsAny(b, "\n \t") {
			t.Fatalf("refs/%s = %q: huggingface_hub writes the bare commit", rev, b)
		}
		commit = string(b)
	}
	b, err := os.ReadFile(filepath.Join(folder, "snapshots", commit, filepath.FromSlash(file)))
	if err != nil {
		t.Fatalf("snapshot file: %v", err)
	}
	return b
}

func assertNoIncomplete(t *testing.T, cacheDir string) {
	t.Helper()
	filepath.WalkDir(cacheDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".incomplete") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}
