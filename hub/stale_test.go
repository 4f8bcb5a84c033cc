package hub

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/testbin"
)

// A pull into --local-dir removes the temporaries an earlier, killed pull
// left there (its copy of a file, its metadata record), and leaves those of
// a process still running alone.
func TestLocalDirSweepsTemporariesOfKilledPulls(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	addTestRepo(t, srv, "acme/tiny-llama")
	c, _ := newTestClient(t, srv, "")
	local := t.TempDir()
	dead := strconv.Itoa(testbin.DeadPID(t))
	orphans := []string{
		filepath.Join(local, ".model.safetensors.edgectl-tmp-"+dead+"-1"),
		filepath.Join(local, "tokenizer", "sub dir", ".tokenizer.json.edgectl-tmp-"+dead+"-2"),
		filepath.Join(local, ".cache", "huggingface", "download", ".config.json.metadata.edgectl-tmp-"+dead+"-3"),
	}
	live := filepath.Join(local, ".config.json.edgectl-tmp-"+strconv.Itoa(os.Getppid())+"-4")
	for _, p := range append(orphans, live) {
		writeFile(t, p, []byte("partial"))
	}
	mustSnapshot(t, c, "acme/tiny-llama", "main", SnapshotOptions{LocalDir: local})
	for _, p := range orphans {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("stale temporary kept: %s", p)
		}
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("the temporary of a live process was removed: %v", err)
	}
}

// --local-dir may not be the Hub cache or a directory inside it (exit 2,
// before any request); one that merely contains the cache is fine.
func TestLocalDirInsideTheCacheIsRefused(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	addTestRepo(t, srv, "acme/tiny-llama")
	root := t.TempDir()
	cache := filepath.Join(root, "hub")
	c, _ := newTestClient(t, srv, cache)
	mustSnapshot(t, c, "acme/tiny-llama", "main", SnapshotOptions{Include: []string{"config.json"}})
	srv.ResetLog()
	link := filepath.Join(root, "alias")
	if err := os.Symlink(cache, link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{cache, filepath.Join(cache, "models--acme--tiny-llama", "snapshots"), filepath.Join(link, "models--acme--tiny-llama")} {
		_, err := c.Snapshot(t.Context(), "acme/tiny-llama", "main", SnapshotOptions{LocalDir: dir})
		if errkind.Of(err) != errkind.Usage || !strings.Contains(err.Error(), "refusing to write --local-dir "+dir) || !strings.Contains(err.Error(), "Hub cache") {
			t.Errorf("--local-dir %s: %v (kind %v)", dir, err, errkind.Of(err))
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests before refusing", n)
	}
	mustSnapshot(t, c, "acme/tiny-llama", "main", SnapshotOptions{Include: []string{"config.json"}, LocalDir: root})
}
