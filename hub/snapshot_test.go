package hub

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

func TestSnapshotWritesHuggingFaceCacheLayout(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, rec := newTestClient(t, srv, "")
	c.cfg.Token = "hf_user_token"

	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{OnEvent: rec.on, Jobs: 2})

	if snap.Commit != repo.commit || len(snap.Files) != 3 {
		t.Fatalf("snapshot commit %s with %d files, want %s with 3", snap.Commit, len(snap.Files), repo.commit)
	}
	cache := c.cfg.CacheDir
	folder := filepath.Join(cache, "models--acme--tiny-llama")
	if snap.Dir != filepath.Join(folder, "snapshots", repo.commit) {
		t.Errorf("Dir = %s", snap.Dir)
	}
	weights := contentBytes(t, repo.weights)
	wantSHA := sha256Hex(weights)
	links := map[string]string{
		"config.json":                      "../../blobs/" + hubtest.GitBlobSHA1(repo.config),
		"tokenizer/sub dir/tokenizer.json": "../../../../blobs/" + hubtest.GitBlobSHA1(repo.tok),
		"model.safetensors":                "../../blobs/" + wantSHA,
	}
	for file, want := range links {
		got, err := os.Readlink(filepath.Join(folder, "snapshots", repo.commit, filepath.FromSlash(file)))
		if err != nil || got != want {
			t.Errorf("%s -> %q (%v), want relative symlink %q", file, got, err, want)
		}
	}
	// Read back the way huggingface_hub resolves a cached file.
	if got := hfRead(t, cache, repo.id, "main", "model.safetensors"); !bytes.Equal(got, weights) {
		t.Errorf("model.safetensors read back through refs/main differs (sha256 %s, want %s)", sha256Hex(got), wantSHA)
	}
	if got := hfRead(t, cache, repo.id, "main", "tokenizer/sub dir/tokenizer.json"); !bytes.Equal(got, repo.tok) {
		t.Errorf("tokenizer.json = %q", got)
	}
	for _, f := range snap.Files {
		if f.Path == "model.safetensors" && (f.SHA256 != wantSHA || f.Size != weightsSize || f.Downloaded != weightsSize || f.Cached) {
			t.Errorf("result %+v", f)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, ".locks", "models--acme--tiny-llama", wantSHA+".lock")); err != nil {
		t.Errorf("no huggingface_hub-style lock file: %v", err)
	}
	assertNoIncomplete(t, cache)

	// The token goes to the Hub and never to the CDN the Hub redirects to.
	var hubAuth, cdnReqs int
	for _, r := range srv.Requests() {
		switch r.Server {
		case "hub":
			if r.Auth == "Bearer hf_user_token" {
				hubAuth++
			}
		case "cdn":
			cdnReqs++
			if r.Auth != "" {
				t.Errorf("token leaked to the CDN: %+v", r)
			}
		}
	}
	if hubAuth == 0 || cdnReqs == 0 {
		t.Errorf("hub requests with token: %d, CDN requests: %d; want both > 0", hubAuth, cdnReqs)
	}
	if rec.count(progress.Start) != 1 || rec.count(progress.FileDone) != 3 {
		t.Errorf("events: %d start, %d file_done", rec.count(progress.Start), rec.count(progress.FileDone))
	}

	// A second pull of the same revision downloads nothing.
	srv.ResetLog()
	again := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{})
	if n := srv.TotalServed(); n != 0 {
		t.Errorf("second pull downloaded %d bytes", n)
	}
	for _, f := range again.Files {
		if !f.Cached || f.Downloaded != 0 {
			t.Errorf("second pull: %+v", f)
		}
	}
}

func TestSnapshotReusesCacheWrittenByAnotherTool(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	cache := t.TempDir()

	// Lay the repository out by hand, as huggingface_hub would have.
	folder := filepath.Join(cache, "models--acme--tiny-llama")
	weights := contentBytes(t, repo.weights)
	blobs := map[string][]byte{
		hubtest.GitBlobSHA1(repo.config): repo.config,
		hubtest.GitBlobSHA1(repo.tok):    repo.tok,
		sha256Hex(weights):               weights,
	}
	for etag, b := range blobs {
		writeFile(t, filepath.Join(folder, "blobs", etag), b)
	}
	snapDir := filepath.Join(folder, "snapshots", repo.commit)
	symlink(t, "../../blobs/"+hubtest.GitBlobSHA1(repo.config), filepath.Join(snapDir, "config.json"))
	symlink(t, "../../../../blobs/"+hubtest.GitBlobSHA1(repo.tok), filepath.Join(snapDir, "tokenizer", "sub dir", "tokenizer.json"))
	symlink(t, "../../blobs/"+sha256Hex(weights), filepath.Join(snapDir, "model.safetensors"))
	writeFile(t, filepath.Join(folder, "refs", "main"), []byte(repo.commit))

	c, _ := newTestClient(t, srv, cache)
	snap := mustSnapshot(t, c, repo.id, "", SnapshotOptions{})
	if n := srv.TotalServed(); n != 0 {
		t.Errorf("downloaded %d bytes though every blob was cached", n)
	}
	if len(snap.Files) != 3 {
		t.Fatalf("%d files", len(snap.Files))
	}
	for _, f := range snap.Files {
		if !f.Cached {
			t.Errorf("%s not taken from the cache", f.Path)
		}
	}

	// Blobs present but no snapshot for a new commit: links are made, nothing downloaded.
	_, commit2 := srv.AddRepo(repo.id,
		&hubtest.File{Path: "config.json", Content: hubtest.Bytes(repo.config)},
		&hubtest.File{Path: "model.safetensors", Content: repo.weights, LFS: true})
	srv.ResetLog()
	snap2 := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{})
	if snap2.Commit != commit2 || srv.TotalServed() != 0 {
		t.Errorf("new commit %s (want %s), %d bytes downloaded", snap2.Commit, commit2, srv.TotalServed())
	}
	if got := hfRead(t, cache, repo.id, "main", "config.json"); !bytes.Equal(got, repo.config) {
		t.Errorf("refs/main not moved to the new commit")
	}
}

func TestSnapshotReusesSymlinklessCache(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	cache := t.TempDir()
	// huggingface_hub without symlink support stores the files themselves in the snapshot.
	snapDir := filepath.Join(cache, "models--acme--tiny-llama", "snapshots", repo.commit)
	writeFile(t, filepath.Join(snapDir, "model.safetensors"), contentBytes(t, repo.weights))
	c, _ := newTestClient(t, srv, cache)
	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"*.safetensors"}})
	if srv.Served("model.safetensors") != 0 || len(snap.Files) != 1 || !snap.Files[0].Cached {
		t.Errorf("served %d bytes, files %+v", srv.Served("model.safetensors"), snap.Files)
	}
}

func TestSnapshotIncludeExclude(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, _ := newTestClient(t, srv, "")

	// fnmatch's * crosses directories: *.json takes the nested tokenizer too.
	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"*.json"}, Exclude: []string{"config.*"}})
	if len(snap.Files) != 1 || snap.Files[0].Path != "tokenizer/sub dir/tokenizer.json" {
		t.Errorf("files %+v", snap.Files)
	}
	if srv.Served("model.safetensors") != 0 {
		t.Errorf("excluded weights were downloaded")
	}

	// A literal name the repo lacks is reported and remembered with a .no_exist marker.
	snap = mustSnapshot(t, c, repo.id, "main", SnapshotOptions{Include: []string{"config.json", "generation_config.json"}})
	if len(snap.Files) != 1 || len(snap.Missing) != 1 || snap.Missing[0] != "generation_config.json" {
		t.Errorf("files %+v missing %v", snap.Files, snap.Missing)
	}
	marker := filepath.Join(c.cfg.CacheDir, "models--acme--tiny-llama", ".no_exist", repo.commit, "generation_config.json")
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("no .no_exist marker: %v", err)
	}

	_, err := c.Snapshot(t.Context(), repo.id, "main", SnapshotOptions{Include: []string{"*.gguf"}})
	if !errors.Is(err, errkind.NotFound) || !strings.Contains(err.Error(), "--include *.gguf") {
		t.Errorf("no match: %v (kind %v)", err, errkind.Of(err))
	}
}

func TestSnapshotRevisionsAndRedirects(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	srv.Tag(repo.id, "refs/pr/1", repo.commit)
	c, _ := newTestClient(t, srv, "")

	// refs/pr/1 travels as one escaped path segment and is cached under refs/refs/pr/1.
	snap := mustSnapshot(t, c, repo.id, "refs/pr/1", SnapshotOptions{Include: []string{"config.json"}})
	if snap.Commit != repo.commit {
		t.Fatalf("commit %s", snap.Commit)
	}
	if got := hfRead(t, c.cfg.CacheDir, repo.id, "refs/pr/1", "config.json"); !bytes.Equal(got, repo.config) {
		t.Errorf("config via refs/pr/1 = %q", got)
	}
	// A commit revision writes no ref.
	mustSnapshot(t, c, repo.id, repo.commit, SnapshotOptions{Include: []string{"config.json"}})
	refs, _ := os.ReadDir(filepath.Join(c.cfg.CacheDir, "models--acme--tiny-llama", "refs"))
	for _, r := range refs {
		if r.Name() == repo.commit {
			t.Errorf("a ref named after the commit was written")
		}
	}

	// A renamed repository answers with relative redirects; the client follows them.
	srv.Rename("acme/old-name", repo.id)
	snap = mustSnapshot(t, c, "acme/old-name", "main", SnapshotOptions{})
	if snap.Commit != repo.commit || len(snap.Files) != 3 {
		t.Errorf("renamed repo: %+v", snap)
	}
}

func TestSnapshotHeadWhenListingHasNoBlobIDs(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	srv.NoBlobs = true
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, _ := newTestClient(t, srv, "")
	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{})
	weights := contentBytes(t, repo.weights)
	for _, f := range snap.Files {
		if f.Path == "model.safetensors" && (f.Etag != sha256Hex(weights) || f.Size != weightsSize) {
			t.Errorf("LFS etag from HEAD: %+v (want X-Linked-Etag %s, not the pointer's ETag)", f, sha256Hex(weights))
		}
		if f.Path == "config.json" && f.Etag != hubtest.GitBlobSHA1(repo.config) {
			t.Errorf("config etag %s", f.Etag)
		}
	}
	var heads int
	for _, r := range srv.Requests() {
		if r.Method == "HEAD" {
			heads++
			if r.Server == "cdn" {
				t.Errorf("HEAD followed the absolute redirect to the CDN")
			}
		}
	}
	if heads < 3 {
		t.Errorf("%d HEAD requests, want one per file at least", heads)
	}
}

func TestSnapshotLocalDir(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, _ := newTestClient(t, srv, "")
	dir := filepath.Join(t.TempDir(), "model")

	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{LocalDir: dir})
	if snap.Dir != dir {
		t.Errorf("Dir = %s", snap.Dir)
	}
	p := filepath.Join(dir, "model.safetensors")
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s is not a real file: %v %v", p, fi, err)
	}
	if b, _ := os.ReadFile(p); sha256Hex(b) != sha256Hex(contentBytes(t, repo.weights)) {
		t.Errorf("local copy differs")
	}
	meta, err := os.ReadFile(filepath.Join(dir, ".cache", "huggingface", "download", "model.safetensors.metadata"))
	lines := strings.Split(string(meta), "\n")
	if err != nil || len(lines) < 3 || lines[0] != repo.commit || lines[1] != sha256Hex(contentBytes(t, repo.weights)) {
		t.Errorf("metadata %q %v", meta, err)
	}

	// Again: nothing downloaded, nothing rewritten.
	srv.ResetLog()
	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{LocalDir: dir})
	fi2, _ := os.Stat(p)
	if srv.TotalServed() != 0 || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Errorf("second local-dir pull: %d bytes served, mtime %v -> %v", srv.TotalServed(), fi.ModTime(), fi2.ModTime())
	}
	// A file edited by the user is restored from the cache.
	os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644)
	mustSnapshot(t, c, repo.id, "main", SnapshotOptions{LocalDir: dir})
	if b, _ := os.ReadFile(filepath.Join(dir, "config.json")); !bytes.Equal(b, repo.config) {
		t.Errorf("edited config.json not restored: %q", b)
	}
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func TestIdenticalFilesShareOneBlob(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	w := hubtest.Generated(5, 2<<20)
	srv.AddRepo("acme/dup",
		&hubtest.File{Path: "a.safetensors", Content: w, LFS: true},
		&hubtest.File{Path: "copy/a.safetensors", Content: w, LFS: true})
	c, _ := newTestClient(t, srv, "")
	snap := mustSnapshot(t, c, "acme/dup", "main", SnapshotOptions{Jobs: 2})
	if got := srv.TotalServed(); got != 2<<20 {
		t.Errorf("served %d bytes for two files with one blob, want %d", got, 2<<20)
	}
	if snap.Files[0].Blob != snap.Files[1].Blob {
		t.Errorf("blobs %s and %s", snap.Files[0].Blob, snap.Files[1].Blob)
	}
	for _, f := range []string{"a.safetensors", "copy/a.safetensors"} {
		if got := hfRead(t, c.cfg.CacheDir, "acme/dup", "main", f); sha256Hex(got) != snap.Files[0].SHA256 {
			t.Errorf("%s differs", f)
		}
	}
}
