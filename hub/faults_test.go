package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

func TestResumeFromIncompleteBlob(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, rec := newTestClient(t, srv, "")
	weights := contentBytes(t, repo.weights)
	sum := sha256Hex(weights)
	// What an interrupted run (ours or huggingface_hub's older layout) leaves.
	const have = 1<<20 + 777
	writeFile(t, filepath.Join(c.cfg.CacheDir, "models--acme--tiny-llama", "blobs", sum+".incomplete"), weights[:have])

	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"model.safetensors"}, OnEvent: rec.on})
	if got := srv.Served("model.safetensors"); got != weightsSize-have {
		t.Errorf("served %d bytes, want only the remaining %d", got, weightsSize-have)
	}
	if f := snap.Files[0]; f.Resumed != have || f.Downloaded != weightsSize-have {
		t.Errorf("result %+v", f)
	}
	var ranged bool
	for _, r := range srv.Requests() {
		if r.Server == "cdn" && r.Range == "bytes=1049353-" {
			ranged = true
		}
	}
	if !ranged {
		t.Errorf("no Range request from the resume offset: %+v", srv.Requests())
	}
	if got := hfRead(t, c.cfg.CacheDir, repo.id, "main", "model.safetensors"); sha256Hex(got) != sum {
		t.Errorf("resumed blob sha256 %s, want %s", sha256Hex(got), sum)
	}
	assertNoIncomplete(t, c.cfg.CacheDir)
}

func TestResumeFromHuggingFaceHubIncomplete(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, _ := newTestClient(t, srv, "")
	weights := contentBytes(t, repo.weights)
	sum := sha256Hex(weights)
	blobs := filepath.Join(c.cfg.CacheDir, "models--acme--tiny-llama", "blobs")
	// Recent huggingface_hub names its partial downloads <etag>.<random>.incomplete.
	writeFile(t, filepath.Join(blobs, sum+".k3j9x0a1.incomplete"), weights[:2<<20])
	writeFile(t, filepath.Join(blobs, sum+".0aa1bb2c.incomplete"), weights[:1000])

	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"model.safetensors"}})
	if got := srv.Served("model.safetensors"); got != weightsSize-2<<20 {
		t.Errorf("served %d bytes, want the %d the larger partial file lacked", got, weightsSize-2<<20)
	}
	if got := hfRead(t, c.cfg.CacheDir, repo.id, "main", "model.safetensors"); sha256Hex(got) != sum {
		t.Errorf("adopted partial download gave sha256 %s", sha256Hex(got))
	}
}

func TestServerIgnoringRangeStartsOver(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	srv.SetFaults("model.safetensors", hubtest.Faults{IgnoreRange: true})
	c, _ := newTestClient(t, srv, "")
	weights := contentBytes(t, repo.weights)
	sum := sha256Hex(weights)
	writeFile(t, filepath.Join(c.cfg.CacheDir, "models--acme--tiny-llama", "blobs", sum+".incomplete"), weights[:5000])

	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{})
	if got := hfRead(t, c.cfg.CacheDir, repo.id, "main", "model.safetensors"); sha256Hex(got) != sum {
		t.Errorf("a 200 answer to a ranged request was appended instead of starting over")
	}
}

func TestConnectionCutMidBodyResumes(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	// Five cuts, each after 512 KiB of body: more than the retry budget would
	// allow if progress did not reset it.
	srv.SetFaults("model.safetensors", hubtest.Faults{Cuts: 5, CutAfter: 512 << 10})
	c, rec := newTestClient(t, srv, "")

	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{OnEvent: rec.on})
	if got := hfRead(t, c.cfg.CacheDir, repo.id, "main", "model.safetensors"); sha256Hex(got) != sha256Hex(contentBytes(t, repo.weights)) {
		t.Fatalf("blob corrupt after cuts")
	}
	// Each retry asked only for what was missing: nothing was served twice.
	if got := srv.Served("model.safetensors"); got != weightsSize {
		t.Errorf("served %d bytes for a %d-byte file", got, weightsSize)
	}
	if n := rec.count(progress.Retry); n != 5 {
		t.Errorf("%d retry events, want 5", n)
	}
	for _, f := range snap.Files {
		if f.Path == "model.safetensors" && f.Downloaded != weightsSize {
			t.Errorf("downloaded %d", f.Downloaded)
		}
	}
}

func TestStalledConnectionIsDroppedAndResumed(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	srv.SetFaults("model.safetensors", hubtest.Faults{Stalls: 1, StallAfter: 1 << 20})
	c, rec := newTestClient(t, srv, "")
	c.StallTimeout = 200 * time.Millisecond

	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"model.safetensors"}, OnEvent: rec.on})
	if got := srv.Served("model.safetensors"); got != weightsSize {
		t.Errorf("served %d bytes, want %d: the retry must resume after the stall", got, weightsSize)
	}
	if rec.count(progress.Retry) != 1 || !strings.Contains(retryMessages(rec), "no data for 200ms") {
		t.Errorf("retries %d: %s", rec.count(progress.Retry), retryMessages(rec))
	}
}

func retryMessages(r *recorder) string {
	var b strings.Builder
	for _, e := range r.events {
		if e.Event == progress.Retry {
			b.WriteString(e.Message + "; ")
		}
	}
	return b.String()
}

func TestRateLimitHonoursRetryAfter(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	srv.SetFaults("config.json", hubtest.Faults{RateLimit: 2, RetryAfter: 7})
	c, rec := newTestClient(t, srv, "")

	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"config.json"}})
	if len(rec.sleeps) != 2 || rec.sleeps[0] != 7*time.Second || rec.sleeps[1] != 7*time.Second {
		t.Errorf("waits %v, want the server's Retry-After (7s) twice", rec.sleeps)
	}
}

func TestBackoffGrowsWithoutRetryAfter(t *testing.T) {
	p := RetryPolicy{Base: 100 * time.Millisecond, Max: time.Second}
	prev := time.Duration(0)
	for n := 1; n <= 3; n++ {
		d := p.delay(n, 0)
		lo := (100 * time.Millisecond << (n - 1)) * 3 / 4
		if d < lo || d <= prev/2 {
			t.Errorf("delay(%d) = %v", n, d)
		}
		prev = d
	}
	if d := p.delay(10, 0); d > time.Second*5/4 {
		t.Errorf("delay not capped: %v", d)
	}
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	srv.SetFaults("config.json", hubtest.Faults{ServerErrors: 100})
	c, _ := newTestClient(t, srv, "")

	_, err := c.Snapshot(t.Context(), repo.id, "main", SnapshotOptions{})
	if errkind.Of(err) != errkind.Busy || !strings.Contains(err.Error(), "after 4 tries") {
		t.Errorf("err = %v (kind %v), want busy after 4 tries, kind %v", err, errkind.Of(err), errkind.Busy)
	}
}

func TestChecksumMismatch(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	sum := sha256Hex(contentBytes(t, repo.weights))

	t.Run("retried once", func(t *testing.T) {
		srv.SetFaults("model.safetensors", hubtest.Faults{Corrupt: 1})
		srv.ResetLog()
		c, rec := newTestClient(t, srv, "")
		c.Retry.Attempts = 1 // the checksum retry is its own, not a network retry
		mustSnapshot(t, c, repo.id, "main", SnapshotOptions{OnEvent: rec.on})
		if got := hfRead(t, c.cfg.CacheDir, repo.id, "main", "model.safetensors"); sha256Hex(got) != sum {
			t.Errorf("corrupt blob kept")
		}
		if rec.count(progress.Warning) != 1 || srv.Served("model.safetensors") != 2*weightsSize {
			t.Errorf("%d warnings, %d bytes served; want 1 and a fresh download", rec.count(progress.Warning), srv.Served("model.safetensors"))
		}
	})
	t.Run("twice fails", func(t *testing.T) {
		srv.SetFaults("model.safetensors", hubtest.Faults{Corrupt: 2})
		c, _ := newTestClient(t, srv, "")
		_, err := c.Snapshot(t.Context(), repo.id, "main", SnapshotOptions{})
		if errkind.Of(err) != errkind.Checksum || !strings.Contains(err.Error(), "model.safetensors") || !strings.Contains(err.Error(), sum) {
			t.Fatalf("err = %v (kind %v)", err, errkind.Of(err))
		}
		blobs := filepath.Join(c.cfg.CacheDir, "models--acme--tiny-llama", "blobs")
		if _, err := os.Stat(filepath.Join(blobs, sum)); err == nil {
			t.Errorf("corrupt blob moved into place")
		}
		assertNoIncomplete(t, c.cfg.CacheDir)
	})
}

func TestGatedRepo(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "meta/gated-model")
	srv.SetGated(repo.id, true)

	c, _ := newTestClient(t, srv, "")
	_, err := c.Snapshot(t.Context(), repo.id, "main", SnapshotOptions{})
	if errkind.Of(err) != errkind.Auth || !strings.Contains(err.Error(), "accept its licence at "+srv.URL()+"/meta/gated-model") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("anonymous: %v (kind %v)", err, errkind.Of(err))
	}
	c.cfg.Token = "hf_not_granted"
	_, err = c.Snapshot(t.Context(), repo.id, "main", SnapshotOptions{})
	if errkind.Of(err) != errkind.Auth || !strings.Contains(err.Error(), "not been granted access") {
		t.Errorf("token without access: %v (kind %v)", err, errkind.Of(err))
	}
	c.cfg.Token = srv.Token
	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{})
}

func TestNotFound(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, _ := newTestClient(t, srv, "")
	cases := []struct{ repo, rev, want string }{
		{"acme/nope", "main", "repository acme/nope not found"},
		{repo.id, "v9", `revision "v9" not found`},
	}
	for _, tc := range cases {
		_, err := c.Snapshot(t.Context(), tc.repo, tc.rev, SnapshotOptions{})
		if errkind.Of(err) != errkind.NotFound || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s@%s: %v (kind %v)", tc.repo, tc.rev, err, errkind.Of(err))
		}
	}
	// A private repo looks missing to anonymous callers; the message says what to do.
	srv.SetPrivate(repo.id, true)
	_, err := c.Snapshot(t.Context(), repo.id, "main", SnapshotOptions{})
	if errkind.Of(err) != errkind.NotFound || !strings.Contains(err.Error(), "set HF_TOKEN") {
		t.Errorf("private: %v", err)
	}
	c.cfg.Token = srv.Token
	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"config.json"}})

	if _, err := c.Snapshot(t.Context(), "../etc", "main", SnapshotOptions{}); err == nil || !strings.Contains(err.Error(), "ORG/NAME") {
		t.Errorf("bad id: %v", err)
	}
}

func TestOffline(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, _ := newTestClient(t, srv, "")
	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"*.json"}})

	c.cfg.Offline = true
	srv.ResetLog()
	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{})
	if len(srv.Requests()) != 0 {
		t.Errorf("offline mode sent %d requests", len(srv.Requests()))
	}
	if !snap.Offline || snap.Commit != repo.commit || len(snap.Files) != 2 {
		t.Errorf("offline snapshot %+v", snap)
	}
	mustSnapshot(t, c, repo.id, repo.commit, SnapshotOptions{Include: []string{"config.json"}})

	for _, tc := range []struct {
		repo, rev string
		include   []string
	}{
		{"acme/other", "main", nil},
		{repo.id, "v2", nil},
		{repo.id, "main", []string{"model.safetensors"}},
	} {
		_, err := c.Snapshot(t.Context(), tc.repo, tc.rev, SnapshotOptions{Include: tc.include})
		if errkind.Of(err) != errkind.Offline || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
			t.Errorf("%s@%s %v: %v (kind %v)", tc.repo, tc.rev, tc.include, err, errkind.Of(err))
		}
	}
}

func TestUnreachableHubFallsBackToCache(t *testing.T) {
	srv := hubtest.New()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, rec := newTestClient(t, srv, "")
	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"config.json"}})
	srv.Close()

	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"config.json"}, OnEvent: rec.on})
	if !snap.Offline || rec.count(progress.Warning) != 1 {
		t.Errorf("offline=%v warnings=%d", snap.Offline, rec.count(progress.Warning))
	}
	_, err := c.Snapshot(t.Context(), "acme/uncached", "main", SnapshotOptions{})
	if errkind.Of(err) != errkind.Network {
		t.Errorf("uncached repo with the Hub down: %v (kind %v)", err, errkind.Of(err))
	}
}

func TestDiskFull(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	// An LFS file larger than any disk: the announced size fails the free-space check before any byte moves.
	srv.AddRepo("acme/huge", &hubtest.File{Path: "model.safetensors", LFS: true,
		Content: hubtest.Generated(1, 1<<56), SHA256: strings.Repeat("ab", 32)})
	c, _ := newTestClient(t, srv, "")
	_, err := c.Snapshot(t.Context(), "acme/huge", "main", SnapshotOptions{})
	if errkind.Of(err) != errkind.DiskFull || !strings.Contains(err.Error(), "HF_HUB_CACHE") {
		t.Errorf("err = %v (kind %v)", err, errkind.Of(err))
	}
	if srv.TotalServed() != 0 {
		t.Errorf("%d bytes downloaded before giving up", srv.TotalServed())
	}

	// A write that hits ENOSPC mid-download is reported the same way.
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full")
	}
	defer f.Close()
	_, werr := f.Write(make([]byte, 4096))
	err = diskErr(werr, "/cache/blobs/x.incomplete")
	if errkind.Of(err) != errkind.DiskFull || !strings.Contains(err.Error(), "/cache/blobs/x.incomplete") {
		t.Errorf("ENOSPC: %v", err)
	}
}

func TestConcurrentPullsShareOneDownload(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	srv.SetFaults("model.safetensors", hubtest.Faults{BytesPerSec: 8 << 20})
	cache := t.TempDir()
	a, _ := newTestClient(t, srv, cache)
	b, recB := newTestClient(t, srv, cache)

	errA := make(chan error, 1)
	go func() {
		_, err := a.Snapshot(t.Context(), repo.id, "main", SnapshotOptions{Include: []string{"model.safetensors"}})
		errA <- err
	}()
	for srv.Served("model.safetensors") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	snapB := mustSnapshot(t, b, repo.id, "main", SnapshotOptions{Include: []string{"model.safetensors"}, OnEvent: recB.on})
	if err := <-errA; err != nil {
		t.Fatal(err)
	}
	if got := srv.Served("model.safetensors"); got != weightsSize {
		t.Errorf("two pulls of one blob served %d bytes, want %d (once)", got, weightsSize)
	}
	if !snapB.Files[0].Cached || recB.count(progress.Warning) != 1 {
		t.Errorf("second pull: %+v, %d warnings; want it to wait on the lock and reuse the blob", snapB.Files[0], recB.count(progress.Warning))
	}
}
