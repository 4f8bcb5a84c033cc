package hub

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/hub/hubtest"
)

// twoRevisions pulls acme/tiny at two commits into a fresh cache through
// the real download path: v1 (tagged) and main share the weights and the
// tokenizer blobs and differ in config.json, as a config-only fix on the
// Hub does. It returns the cache dir, both commits and the repository.
func twoRevisions(t *testing.T) (cache, v1, v2 string, r *testRepo) {
	t.Helper()
	srv := hubtest.New()
	t.Cleanup(srv.Close)
	r = addTestRepo(t, srv, "acme/tiny")
	v1 = r.commit
	srv.Tag("acme/tiny", "v1", v1)
	_, v2 = srv.AddRepo("acme/tiny",
		&hubtest.File{Path: "config.json", Content: hubtest.Bytes([]byte(`{"architectures":["LlamaForCausalLM"],"hidden_size":64,"fixed":true}` + "\n"))},
		&hubtest.File{Path: "tokenizer/sub dir/tokenizer.json", Content: hubtest.Bytes(r.tok)},
		&hubtest.File{Path: "model.safetensors", Content: r.weights, LFS: true},
	)
	c, _ := newTestClient(t, srv, "")
	mustSnapshot(t, c, "acme/tiny", "v1", SnapshotOptions{})
	mustSnapshot(t, c, "acme/tiny", "main", SnapshotOptions{})
	return c.cfg.CacheDir, v1, v2, r
}

// newConfigSize is the size of v2's config.json above.
var newConfigSize = int64(len(`{"architectures":["LlamaForCausalLM"],"hidden_size":64,"fixed":true}` + "\n"))

func TestScanCacheCountsSharedBlobsOnce(t *testing.T) {
	cache, v1, v2, r := twoRevisions(t)
	// Not repositories: reported or skipped, never counted.
	os.MkdirAll(filepath.Join(cache, "datasets--acme--data", "blobs"), 0o755)
	os.MkdirAll(filepath.Join(cache, "stray"), 0o755)

	info, err := ScanCache(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Repos) != 1 || info.Repos[0].Repo != "acme/tiny" {
		t.Fatalf("repos %+v", info.Repos)
	}
	repo := info.Repos[0]
	shared := weightsSize + int64(len(r.tok))
	rev1Size := shared + int64(len(r.config))
	rev2Size := shared + newConfigSize
	if want := shared + int64(len(r.config)) + newConfigSize; repo.SizeOnDisk != want || info.SizeOnDisk != want || repo.Files != 4 {
		t.Errorf("repo size %d (%d files), cache %d; want %d over 4 distinct blobs", repo.SizeOnDisk, repo.Files, info.SizeOnDisk, want)
	}
	if repo.SizeOnDisk >= rev1Size+rev2Size {
		t.Errorf("repo size %d is the sum of its revisions: shared blobs counted twice", repo.SizeOnDisk)
	}
	got := map[string]CachedRevision{}
	for _, rev := range repo.Revisions {
		got[rev.Commit] = rev
	}
	if rv := got[v1]; rv.Size != rev1Size || rv.Files != 3 || !slices.Equal(rv.Refs, []string{"v1"}) {
		t.Errorf("v1: %+v, want size %d, 3 files, refs [v1]", rv, rev1Size)
	}
	if rv := got[v2]; rv.Size != rev2Size || rv.Files != 3 || !slices.Equal(rv.Refs, []string{"main"}) {
		t.Errorf("main: %+v, want size %d, 3 files, refs [main]", rv, rev2Size)
	}
	if repo.Unreferenced != 0 || repo.Modified.IsZero() {
		t.Errorf("unreferenced %d, modified %v", repo.Unreferenced, repo.Modified)
	}
	if len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], "stray") {
		t.Errorf("warnings %q: want one, for the stray folder", info.Warnings)
	}

	// The same sizes from the file system alone, as du counts them: every
	// blob file once (blob paths are what snapshots link to).
	var du int64
	filepath.WalkDir(filepath.Join(cache, RepoFolderName("acme/tiny"), "blobs"), func(p string, d os.DirEntry, err error) error {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			du += fi.Size()
		}
		return nil
	})
	if du != repo.SizeOnDisk {
		t.Errorf("blobs/ holds %d bytes, scan says %d", du, repo.SizeOnDisk)
	}

	if info, err := ScanCache(filepath.Join(cache, "absent")); err != nil || len(info.Repos) != 0 {
		t.Errorf("missing cache: %+v, %v", info, err)
	}
}

// A snapshot link that leads out of the repository's blobs/ (a hostile or
// broken cache) is reported and not counted; a symlinked repository folder
// is not entered.
func TestScanCacheDoesNotFollowLinksOut(t *testing.T) {
	cache, _, v2, _ := twoRevisions(t)
	outside := filepath.Join(t.TempDir(), "secret.bin")
	os.WriteFile(outside, make([]byte, 1000), 0o644)
	snap := filepath.Join(cache, RepoFolderName("acme/tiny"), "snapshots", v2)
	if err := os.Symlink(outside, filepath.Join(snap, "evil.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(cache, "models--acme--linked")); err != nil {
		t.Fatal(err)
	}
	before, _ := ScanCache(cache)
	os.Remove(filepath.Join(snap, "evil.bin"))
	after, _ := ScanCache(cache)
	if len(before.Repos) != 1 || before.SizeOnDisk != after.SizeOnDisk {
		t.Errorf("with an outside link: %d repos, %d bytes; without: %d bytes", len(before.Repos), before.SizeOnDisk, after.SizeOnDisk)
	}
	var saw []string
	for _, w := range before.Warnings {
		if strings.Contains(w, "evil.bin") || strings.Contains(w, "models--acme--linked") {
			saw = append(saw, w)
		}
	}
	if len(saw) != 2 {
		t.Errorf("warnings %q: want the outside link and the linked folder named", before.Warnings)
	}
}
