//go:build linux || darwin || freebsd

package hub

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/edgectl/edgectl/internal/errkind"
)

// TestDeleteWaitsForNoDownload: while a download holds one of the
// repository's locks (as pull and huggingface_hub take them), rm is busy
// and deletes nothing.
func TestDeleteWaitsForNoDownload(t *testing.T) {
	cache, _, _, _ := twoRevisions(t)
	locks, _ := filepath.Glob(filepath.Join(cache, ".locks", RepoFolderName("acme/tiny"), "*.lock"))
	if len(locks) == 0 {
		t.Fatal("the pull left no lock files to take")
	}
	f, err := os.OpenFile(locks[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	p, err := PlanDelete(cache, "acme/tiny", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Execute(); errkind.Of(err) != errkind.Busy {
		t.Fatalf("with a download's lock held: %v, want busy", err)
	}
	if _, err := os.Stat(filepath.Join(cache, RepoFolderName("acme/tiny"))); err != nil {
		t.Fatalf("the repository went anyway: %v", err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err := p.Execute(); err != nil {
		t.Fatal(err)
	}
}
