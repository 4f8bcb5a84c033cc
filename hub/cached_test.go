package hub

import (
	"testing"

	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/errkind"
)

func TestCachedAnswersWithoutTheNetwork(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	r := addTestRepo(t, srv, "acme/tiny")
	c, _ := newTestClient(t, srv, "")

	if _, err := c.Cached("acme/tiny", ""); errkind.Of(err) != errkind.Offline {
		t.Fatalf("before any pull: %v (kind %v), want offline", err, errkind.Of(err))
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("Cached made %d requests before the pull", n)
	}
	pulled := mustSnapshot(t, c, "acme/tiny", "", SnapshotOptions{})
	srv.ResetLog()
	for _, rev := range []string{"", "main", r.commit} {
		snap, err := c.Cached("acme/tiny", rev)
		if err != nil {
			t.Fatalf("Cached(%q): %v", rev, err)
		}
		if snap.Dir != pulled.Dir || snap.Commit != r.commit || len(snap.Files) != 3 || !snap.Offline {
			t.Errorf("Cached(%q) = %+v, want the pulled snapshot %s", rev, snap, pulled.Dir)
		}
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("Cached touched the network: %+v", reqs)
	}
	if _, err := c.Cached("acme/tiny", "v2"); errkind.Of(err) != errkind.Offline {
		t.Errorf("uncached revision: %v", err)
	}
	for _, bad := range []string{"../x", "a--b/c"} {
		if _, err := c.Cached(bad, ""); err == nil {
			t.Errorf("Cached(%q) accepted", bad)
		}
	}
	if _, err := c.Cached("acme/tiny", "../main"); err == nil {
		t.Error("revision ../main accepted")
	}
}
