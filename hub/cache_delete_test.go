package hub

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/errkind"
)

// blobNames lists the files in the repository's blobs/.
func blobNames(t *testing.T, cache string) []string {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(cache, RepoFolderName("acme/tiny"), "blobs"))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// cacheRootNames lists the cache root, to see that nothing (no temporary)
// is left beside the repositories.
func cacheRootNames(t *testing.T, cache string) []string {
	t.Helper()
	ents, _ := os.ReadDir(cache)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestDeleteRevisionKeepsSharedBlobs(t *testing.T) {
	cache, v1, v2, r := twoRevisions(t)
	before := blobNames(t, cache)
	p, err := PlanDelete(cache, "acme/tiny", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if p.Whole || !slices.Equal(p.Commits, []string{v1}) || !slices.Equal(p.Refs, []string{"v1"}) || p.Freed != int64(len(r.config)) {
		t.Fatalf("plan %+v: want v1's commit and ref, freeing only its config.json (%d bytes)", p, len(r.config))
	}
	if err := p.Execute(); err != nil {
		t.Fatal(err)
	}
	after := blobNames(t, cache)
	if len(after) != len(before)-1 || slices.Contains(after, hubtest.GitBlobSHA1(r.config)) {
		t.Errorf("blobs %v → %v: want only v1's config.json blob gone", before, after)
	}
	folder := filepath.Join(cache, RepoFolderName("acme/tiny"))
	if _, err := os.Stat(filepath.Join(folder, "snapshots", v1)); !os.IsNotExist(err) {
		t.Errorf("v1's snapshot is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(folder, "refs", "v1")); !os.IsNotExist(err) {
		t.Errorf("refs/v1 is still there: %v", err)
	}
	// main is whole, read as huggingface_hub reads it.
	if b := hfRead(t, cache, "acme/tiny", "main", "model.safetensors"); sha256Hex(b) != sha256Hex(contentBytes(t, r.weights)) {
		t.Error("main's weights changed")
	}
	hfRead(t, cache, "acme/tiny", v2, "tokenizer/sub dir/tokenizer.json")
	if names := cacheRootNames(t, cache); !slices.Equal(names, []string{".locks", RepoFolderName("acme/tiny")}) {
		t.Errorf("cache root holds %v", names)
	}

	// The last revision takes the repository with it, locks included.
	p, err = PlanDelete(cache, "acme/tiny", v2[:7])
	if err != nil {
		t.Fatal(err)
	}
	if !p.Whole || p.Freed != weightsSize+int64(len(r.tok))+newConfigSize {
		t.Fatalf("plan %+v: want the whole repository", p)
	}
	if err := p.Execute(); err != nil {
		t.Fatal(err)
	}
	if names := cacheRootNames(t, cache); !slices.Equal(names, []string{".locks"}) {
		t.Errorf("cache root holds %v, want only .locks", names)
	}
	if ents, _ := os.ReadDir(filepath.Join(cache, ".locks")); len(ents) != 0 {
		t.Errorf(".locks holds %d entries", len(ents))
	}
	if _, err := PlanDelete(cache, "acme/tiny", ""); errkind.Of(err) != errkind.NotFound {
		t.Errorf("deleting it again: %v, want not found", err)
	}
}

func TestDeleteWholeRepository(t *testing.T) {
	cache, _, _, _ := twoRevisions(t)
	p, err := PlanDelete(cache, "acme/tiny", "")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Whole || len(p.Commits) != 2 || len(p.Refs) != 2 {
		t.Fatalf("plan %+v", p)
	}
	// A killed earlier rm left a temporary: it goes too.
	stale := filepath.Join(cache, ".models--acme--old.edgectl-tmp-999999999-x")
	os.MkdirAll(filepath.Join(stale, "blobs"), 0o755)
	if err := p.Execute(); err != nil {
		t.Fatal(err)
	}
	if names := cacheRootNames(t, cache); !slices.Equal(names, []string{".locks"}) {
		t.Errorf("cache root holds %v", names)
	}
}

func TestDeleteRefusesPathsOutOfTheCache(t *testing.T) {
	cache, _, _, _ := twoRevisions(t)
	for _, c := range []struct{ repo, rev string }{
		{"../x", ""}, {"acme/../../x", ""}, {"/etc", ""}, {"acme/tiny/../..", ""},
		{"acme/tiny", "../../x"}, {"acme/tiny", "/etc/passwd"}, {"acme/tiny", "refs/../../../x"},
	} {
		_, err := PlanDelete(cache, c.repo, c.rev)
		if errkind.Of(err) != errkind.Usage {
			t.Errorf("PlanDelete(%q, %q): %v, want a usage error", c.repo, c.rev, err)
		}
	}
	// A repository folder that is a symlink is not followed.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(cache, "models--acme--linked"))
	if _, err := PlanDelete(cache, "acme/linked", ""); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlinked folder: %v", err)
	}
	// A snapshot link into another directory is never a blob to delete.
	info, _ := ScanCache(cache)
	snap := info.Repos[0].Revisions[0].Path
	os.Symlink(filepath.Join(outside, "keep"), filepath.Join(snap, "evil"))
	p, err := PlanDelete(cache, "acme/tiny", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Execute(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("a file outside the cache was deleted: %v", err)
	}
}
