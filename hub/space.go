package hub

import (
	"sync"

	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/units"
)

// spaceBook keeps the free-space check honest when several files download
// at once: each download reserves the bytes it has yet to write, and a new
// one must fit beside all of them, not only beside what is on disk now.
type spaceBook struct {
	mu      sync.Mutex
	pending int64 // bytes the downloads in progress have still to write
}

// reservation is one download's share of a spaceBook. A nil reservation
// (size unknown, no check) accepts every call.
type reservation struct {
	book *spaceBook
	mu   sync.Mutex
	left int64
}

// reserve checks that need more bytes fit in dir and books them. The free
// space comes from Client.FreeSpace (statfs by default); where it is
// unknown, nothing is checked.
func (s *session) reserve(t target, dir string, need int64) (*reservation, error) {
	if need <= 0 {
		return nil, nil
	}
	b := &s.space
	b.mu.Lock()
	defer b.mu.Unlock()
	if free, ok := s.c.freeSpace(dir); ok && free-b.pending < need {
		others := ""
		if b.pending > 0 {
			others = ", of which " + units.Bytes(b.pending) + " are promised to the other downloads in progress"
		}
		return nil, errkind.Errorf(errkind.DiskFull, "no space left for %s: it needs %s (%d bytes) more in %s, which has %s free%s; free space or point HF_HUB_CACHE (or --local-dir) at a larger disk",
			t, units.Bytes(need), need, dir, units.Bytes(free), others)
	}
	b.pending += need
	return &reservation{book: b, left: need}, nil
}

// wrote releases n written bytes: they now show in the free space itself.
func (r *reservation) wrote(n int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	k := min(n, r.left)
	r.left -= k
	r.mu.Unlock()
	r.book.mu.Lock()
	r.book.pending -= k
	r.book.mu.Unlock()
}

// done gives back what the download did not write (it failed, or was done).
func (r *reservation) done() {
	if r == nil {
		return
	}
	r.mu.Lock()
	k := r.left
	r.left = 0
	r.mu.Unlock()
	r.book.mu.Lock()
	r.book.pending -= k
	r.book.mu.Unlock()
}
