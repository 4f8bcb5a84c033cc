package hub

import (
	"fmt"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/hub/hubtest"
)

func TestTruncatedSiblingsFallBackToTreeAPI(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	srv.TruncateSiblings = true
	srv.TreePageSize = 2 // three files and two directories: three pages
	repo := addTestRepo(t, srv, "acme/tiny-llama")
	c, _ := newTestClient(t, srv, "")

	snap := mustSnapshot(t, c, repo.id, "main", SnapshotOptions{})
	if len(snap.Files) != 3 {
		t.Fatalf("%d files from the tree API, want 3: %+v", len(snap.Files), snap.Files)
	}
	weights := contentBytes(t, repo.weights)
	for _, f := range snap.Files {
		if f.Path == "model.safetensors" && f.SHA256 != sha256Hex(weights) {
			t.Errorf("LFS sha256 from the tree: %+v", f)
		}
	}
	var pages int
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "/tree/") {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("%d tree pages fetched, want 3 (Link rel=next followed)", pages)
	}
}

func TestLargeRepoListsThroughTreeAPI(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	srv.TreePageSize = 400
	var files []*hubtest.File
	for i := range largeRepoSiblings + 1 {
		files = append(files, &hubtest.File{Path: fmt.Sprintf("shards/%04d.json", i), Content: hubtest.Bytes(fmt.Appendf(nil, "%d", i))})
	}
	srv.AddRepo("acme/many", files...)
	c, _ := newTestClient(t, srv, "")
	snap := mustSnapshot(t, c, "acme/many", "main", SnapshotOptions{Include: []string{"shards/1000.json"}})
	if len(snap.Files) != 1 || hfRead(t, c.cfg.CacheDir, "acme/many", "main", "shards/1000.json")[0] != '1' {
		t.Fatalf("files %+v", snap.Files)
	}
	var pages int
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "/tree/") {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("%d tree pages for %d files at 400 a page, want 3", pages, largeRepoSiblings+2)
	}
}

func TestNextLink(t *testing.T) {
	for h, want := range map[string]string{
		`<https://hf.co/api/models/a/b/tree/main?cursor=xyz>; rel="next"`: "https://hf.co/api/models/a/b/tree/main?cursor=xyz",
		`<https://x/prev>; rel="prev", <https://x/next>; rel=next`:        "https://x/next",
		`<https://x/last>; rel="last"`:                                    "",
		``:                                                                "",
	} {
		if got := nextLink(h); got != want {
			t.Errorf("nextLink(%q) = %q, want %q", h, got, want)
		}
	}
}
