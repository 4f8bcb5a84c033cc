package hub

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

// hostileRepo is a repository with one 1000-byte file, LFS (served by the
// CDN, size from the listing or X-Linked-Size) or not.
func hostileRepo(srv *hubtest.Server, lfs bool) (file string, content []byte) {
	content = bytes.Repeat([]byte("0123456789"), 100)
	file = "config.json"
	if lfs {
		file = "model.safetensors"
	}
	srv.AddRepo("acme/small", &hubtest.File{Path: file, Content: hubtest.Bytes(content), LFS: lfs})
	return file, content
}

// assertNothingKept checks that a failed download left no bytes in the
// cache: no blob, no partial blob, no snapshot entry.
func assertNothingKept(t *testing.T, cache string) {
	t.Helper()
	filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, string(filepath.Separator)+"blobs"+string(filepath.Separator)) {
			t.Errorf("left in the cache: %s", p)
		}
		if err == nil && strings.Contains(p, string(filepath.Separator)+"snapshots"+string(filepath.Separator)) && !d.IsDir() {
			t.Errorf("snapshot entry for a failed download: %s", p)
		}
		return nil
	})
}

// A mirror that streams 300 MB for a file the Hub listed at 1000 bytes is
// cut off at the first byte past 1000: the pull fails with the checksum
// exit code, the partial download is removed, and only a small part of
// the 300 MB ever crossed the connection (socket buffers, not the disk).
func TestOversizedBodyStopsAtAnnouncedSize(t *testing.T) {
	for _, tc := range []struct {
		name         string
		lfs, noBlobs bool
	}{
		{"regular file, size from the listing", false, false},
		{"LFS file from the CDN, size from the listing", true, false},
		{"LFS file, size from X-Linked-Size (HEAD)", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := hubtest.New()
			defer srv.Close()
			srv.NoBlobs = tc.noBlobs
			file, _ := hostileRepo(srv, tc.lfs)
			const extra = 300 << 20
			srv.SetFaults(file, hubtest.Faults{ExtraBytes: extra})
			c, _ := newTestClient(t, srv, "")

			start := time.Now()
			_, err := c.Snapshot(t.Context(), "acme/small", "main", SnapshotOptions{})
			if errkind.Of(err) != errkind.Checksum || !strings.Contains(err.Error(), "more than the 1000 bytes the Hub announced") ||
				!strings.Contains(err.Error(), file) {
				t.Fatalf("err = %v (kind %v), want a size mismatch naming %s, kind %v", err, errkind.Of(err), file, errkind.Checksum)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v: the body was not cut off", d)
			}
			srv.WaitIdle()
			// Two tries (the fresh retry a mismatch gets), each stopped early.
			if got := srv.Served(file); got > 32<<20 {
				t.Errorf("the server pushed %d bytes before the client hung up; want far less than %d", got, extra+1000)
			}
			assertNothingKept(t, c.cfg.CacheDir)
		})
	}
}

// A server whose Content-Length promises more than the Hub listed is
// refused before any byte of its body is read.
func TestLyingContentLengthIsRefused(t *testing.T) {
	for _, lfs := range []bool{false, true} {
		srv := hubtest.New()
		file, _ := hostileRepo(srv, lfs)
		srv.SetFaults(file, hubtest.Faults{ContentLength: 300 << 20})
		c, _ := newTestClient(t, srv, "")
		_, err := c.Snapshot(t.Context(), "acme/small", "main", SnapshotOptions{})
		if errkind.Of(err) != errkind.Checksum || !strings.Contains(err.Error(), "announced 314572800 bytes (Content-Length) from byte 0 of a file the Hub listed at 1000 bytes") {
			t.Errorf("lfs=%v: err = %v (kind %v)", lfs, err, errkind.Of(err))
		}
		assertNothingKept(t, c.cfg.CacheDir)
		srv.Close()
	}
}

// The same mirror behaving (no extra bytes) still serves the file: the
// bound costs nothing to an honest server.
func TestHonestBodyAtTheBoundPasses(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	file, content := hostileRepo(srv, true)
	c, _ := newTestClient(t, srv, "")
	mustSnapshot(t, c, "acme/small", "main", SnapshotOptions{})
	if got := hfRead(t, c.cfg.CacheDir, "acme/small", "main", file); !bytes.Equal(got, content) {
		t.Errorf("got %d bytes, want the 1000 announced", len(got))
	}
}

// chunkReader hands out its data in reads of the given sizes, as a
// network body does.
type chunkReader struct {
	data   []byte
	chunks []int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.chunks) > 0 {
		n, r.chunks = min(r.chunks[0], n), r.chunks[1:]
	}
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// copyBody writes at most the announced bytes: not one byte of a read that
// crosses the limit lands past it (+0), and a body that ends exactly at the
// limit is complete.
func TestCopyBodyWritesNothingPastTheLimit(t *testing.T) {
	s := &session{emit: func(progress.Event) {}}
	for _, tc := range []struct {
		body   int
		chunks []int
		over   bool
	}{
		{1000, nil, false},
		{1000, []int{999, 1}, false},
		{1001, nil, true},              // one byte too many, in the same read
		{1001, []int{1000, 1}, true},   // one byte too many, in a read of its own
		{5000, []int{700, 4300}, true}, // a read that crosses the limit
	} {
		t.Run(fmt.Sprintf("%d bytes in %v", tc.body, tc.chunks), func(t *testing.T) {
			dst, err := os.Create(filepath.Join(t.TempDir(), "blob.incomplete"))
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			src := &chunkReader{data: bytes.Repeat([]byte{7}, tc.body), chunks: tc.chunks}
			n, rerr, werr := s.copyBody(dst, nil, src, newPipeBufs(), &fileSpec{path: "f", size: 1000}, 0, 1000, nil)
			if werr != nil {
				t.Fatal(werr)
			}
			if got := errors.Is(rerr, errOverflow); got != tc.over {
				t.Errorf("overflow %v (%v), want %v", got, rerr, tc.over)
			}
			fi, _ := dst.Stat()
			if n > 1000 || fi.Size() > 1000 {
				t.Errorf("wrote %d bytes (file %d), limit 1000", n, fi.Size())
			}
		})
	}
}

// Before a download starts, the free space of the cache's disk must hold
// what the file still needs: otherwise exit 14 at once, naming the numbers
// and the directory, with no byte transferred.
func TestFreeSpaceCheckedBeforeDownload(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	addTestRepo(t, srv, "acme/tiny-llama")
	c, _ := newTestClient(t, srv, "")
	var asked []string
	c.FreeSpace = func(dir string) (int64, bool) {
		asked = append(asked, dir)
		return 1 << 20, true // 1 MiB free; the weights need 3 MiB
	}
	_, err := c.Snapshot(t.Context(), "acme/tiny-llama", "main", SnapshotOptions{Include: []string{"model.safetensors"}})
	blobs := filepath.Join(c.cfg.CacheDir, "models--acme--tiny-llama", "blobs")
	want := fmt.Sprintf("it needs 3.0 MiB (%d bytes) more in %s, which has 1.0 MiB free", weightsSize, blobs)
	if errkind.Of(err) != errkind.DiskFull || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("err = %v (kind %v), want kind %v with %q", err, errkind.Of(err), errkind.DiskFull, want)
	}
	if len(asked) == 0 || asked[0] != blobs {
		t.Errorf("free space asked for %v, want %s", asked, blobs)
	}
	if n := srv.TotalServed(); n != 0 {
		t.Errorf("%d bytes downloaded before the free-space check failed", n)
	}
	assertNothingKept(t, c.cfg.CacheDir)

	// A resumed download needs only the bytes it lacks.
	c.FreeSpace = func(string) (int64, bool) { return weightsSize - 2<<20 + 1, true }
	weights := contentBytes(t, hubtest.Generated(7, weightsSize))
	writeFile(t, filepath.Join(blobs, sha256Hex(weights)+".incomplete"), weights[:2<<20])
	mustSnapshot(t, c, "acme/tiny-llama", "main", SnapshotOptions{Include: []string{"model.safetensors"}})
}

// Downloads running at once share the disk: a file is refused when it fits
// beside what is on disk but not beside what the others still have to write.
func TestFreeSpaceCountsParallelDownloads(t *testing.T) {
	for _, jobs := range []int{1, 2} {
		srv := hubtest.New()
		const size = 3 << 20
		srv.AddRepo("acme/two",
			&hubtest.File{Path: "a.safetensors", Content: hubtest.Generated(1, size), LFS: true},
			&hubtest.File{Path: "b.safetensors", Content: hubtest.Generated(2, size), LFS: true})
		// Slow enough that with two jobs both are in flight together.
		srv.SetFaults("a.safetensors", hubtest.Faults{BytesPerSec: 16 << 20})
		srv.SetFaults("b.safetensors", hubtest.Faults{BytesPerSec: 16 << 20})
		c, _ := newTestClient(t, srv, "")
		// A disk with room for one file and a half: free space shrinks as
		// blobs are written, as statfs would report.
		c.FreeSpace = func(dir string) (int64, bool) {
			return size*3/2 - dirBytes(dir), true
		}
		_, err := c.Snapshot(t.Context(), "acme/two", "main", SnapshotOptions{Jobs: jobs})
		if errkind.Of(err) != errkind.DiskFull {
			t.Errorf("jobs %d: err = %v (kind %v), want disk full", jobs, err, errkind.Of(err))
		}
		srv.Close()
	}
}

func dirBytes(dir string) (n int64) {
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// The default free-space probe is statfs of the cache directory.
func TestFreeBytesReadsTheFileSystem(t *testing.T) {
	free, ok := freeBytes(t.TempDir())
	if !ok {
		t.Skip("no statfs on this system")
	}
	if free <= 0 {
		t.Errorf("statfs says %d bytes free in a directory the test just created", free)
	}
	if _, ok := freeBytes(filepath.Join(t.TempDir(), "missing")); ok {
		t.Error("a missing directory has no free space to report")
	}
}
