package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

// fileSpec is one file to fetch, with what the listing told about it.
type fileSpec struct {
	path   string
	size   int64  // -1 when unknown
	etag   string // "" when the listing had no blob ids: ask with HEAD
	sha256 string // LFS files
}

// FileResult is one file of a snapshot.
type FileResult struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	Etag       string `json:"etag"`
	SHA256     string `json:"sha256,omitempty"` // checked sha256 (LFS files)
	Blob       string `json:"blob"`             // path of the blob in the cache
	Cached     bool   `json:"cached"`           // already in the cache: nothing downloaded
	Downloaded int64  `json:"downloaded"`       // bytes received in this run
	Resumed    int64  `json:"resumed_from,omitempty"`
}

// session is one Snapshot's shared state.
type session struct {
	c      *Client
	rc     repoCache
	repo   string
	commit string
	emit   progress.Func
	space  spaceBook
}

func (s *session) resolveURL(file string) string {
	segs := strings.Split(file, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return s.c.cfg.Endpoint + "/" + s.repo + "/resolve/" + s.commit + "/" + strings.Join(segs, "/")
}

func (s *session) onRetry(file string) func(int, time.Duration, error) {
	return func(attempt int, d time.Duration, err error) {
		s.emit(progress.Event{Event: progress.Retry, Repo: s.repo, File: file, Attempt: attempt, DelayMS: d.Milliseconds(), Message: err.Error()})
	}
}

// fetch brings one file into the cache and links it into the snapshot.
func (s *session) fetch(ctx context.Context, f fileSpec) (FileResult, error) {
	t := target{repo: s.repo, revision: s.commit, file: f.path}
	if f.etag == "" {
		if err := s.head(ctx, &f); err != nil {
			return FileResult{Path: f.path}, err
		}
	}
	if err := checkEtag(f.etag); err != nil {
		return FileResult{Path: f.path}, fmt.Errorf("%s: %w", t, err)
	}
	res := FileResult{Path: f.path, Size: f.size, Etag: f.etag, SHA256: f.sha256, Blob: s.rc.blob(f.etag)}
	if res.SHA256 == "" && sha256Re.MatchString(f.etag) {
		res.SHA256 = f.etag
	}

	done := func() (FileResult, error) {
		if err := s.rc.link(s.commit, f.path, f.etag); err != nil {
			return res, err
		}
		s.emit(progress.Event{Event: progress.FileDone, Repo: s.repo, File: f.path, Bytes: res.Size, Total: res.Size, Cached: res.Cached})
		return res, nil
	}
	if sz := blobSize(res.Blob); sz >= 0 && (f.size < 0 || sz == f.size) {
		res.Cached, res.Size = true, sz
		return done()
	}
	// A symlink-less cache (huggingface_hub on Windows without developer
	// mode) keeps the file itself in the snapshot and no blob.
	ptr := s.rc.pointer(s.commit, f.path)
	if fi, err := os.Lstat(ptr); err == nil && fi.Mode().IsRegular() && (f.size < 0 || fi.Size() == f.size) {
		res.Cached, res.Size, res.Blob = true, fi.Size(), ptr
		s.emit(progress.Event{Event: progress.FileDone, Repo: s.repo, File: f.path, Bytes: res.Size, Total: res.Size, Cached: true})
		return res, nil
	}

	unlock, err := lockFile(ctx, s.rc.lock(f.etag), func() {
		s.emit(progress.Event{Event: progress.Warning, Repo: s.repo, File: f.path, Message: "waiting for another download of the same blob (lock " + s.rc.lock(f.etag) + ")"})
	})
	if err != nil {
		return res, err
	}
	defer unlock()
	// Another process may have finished the blob while we waited.
	if sz := blobSize(res.Blob); sz >= 0 && (f.size < 0 || sz == f.size) {
		res.Cached, res.Size = true, sz
		return done()
	}

	for try := 1; ; try++ {
		err := s.download(ctx, &f, &res)
		var ce *checksumError
		if !errors.As(err, &ce) {
			if err != nil {
				return res, err
			}
			return done()
		}
		os.Remove(s.rc.incomplete(f.etag)) // never keep bytes that failed the check
		if try == 2 {
			if ce.sizeOnly() {
				return res, errkind.Errorf(errkind.Checksum, "size mismatch for %s after a fresh retry: %w; the download was discarded (a mirror or proxy is serving something else, or HF_ENDPOINT is not a Hub)", t, ce)
			}
			return res, errkind.Errorf(errkind.Checksum, "checksum mismatch for %s after a fresh retry: %w; the download was discarded (a proxy or disk is corrupting data, or the upload is broken)", t, ce)
		}
		s.emit(progress.Event{Event: progress.Warning, Repo: s.repo, File: f.path, Message: "checksum mismatch, downloading again: " + ce.Error()})
	}
}

// head asks the Hub for a file's ETag and size, as hf_hub_download does when
// the listing lacked blob ids.
func (s *session) head(ctx context.Context, f *fileSpec) error {
	t := target{repo: s.repo, revision: s.commit, file: f.path}
	return s.c.withRetry(ctx, t.String(), s.onRetry(f.path), func() error {
		resp, err := s.c.do(ctx, http.MethodHead, s.resolveURL(f.path), nil, false)
		if err != nil {
			return err
		}
		if resp.StatusCode >= 400 {
			return s.c.statusError(resp, t)
		}
		resp.Body.Close()
		h := resp.hub
		if h == nil {
			h = resp.Header
		}
		if c := h.Get(headerRepoCommit); c != "" && c != s.commit {
			return fmt.Errorf("%s: the Hub served commit %s, expected %s", t, c, s.commit)
		}
		f.etag = normalizeEtag(firstNonEmpty(h.Get(headerLinkedEtag), h.Get("ETag")))
		if f.etag == "" {
			return fmt.Errorf("%s: the Hub sent no ETag: is HF_ENDPOINT a Hugging Face Hub?", t)
		}
		size := firstNonEmpty(h.Get(headerLinkedSize), h.Get("Content-Length"))
		if n, err := strconv.ParseInt(size, 10, 64); err == nil {
			f.size = n
		}
		return nil
	})
}

// download fetches f into blobs/<etag>.incomplete, resuming what is there,
// checks it, and renames it to blobs/<etag>.
func (s *session) download(ctx context.Context, f *fileSpec, res *FileResult) error {
	t := target{repo: s.repo, revision: s.commit, file: f.path}
	inc := s.rc.incomplete(f.etag)
	if err := os.MkdirAll(filepath.Dir(inc), 0o755); err != nil {
		return diskErr(err, inc)
	}
	adoptIncomplete(inc, f.etag)
	fh, err := os.OpenFile(inc, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return diskErr(err, inc)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return err
	}
	off := fi.Size()
	if f.size >= 0 && off > f.size {
		off = 0
	}
	if err := fh.Truncate(off); err != nil {
		return diskErr(err, inc)
	}
	v := newVerifier(f.sha256, f.etag, f.size)
	if off > 0 && v != nil {
		// The hash must cover the bytes a killed run left behind.
		if _, err := io.Copy(v, io.NewSectionReader(fh, 0, off)); err != nil {
			return fmt.Errorf("read %s: %w", inc, err)
		}
	}
	res.Resumed = off
	// Free space is checked before the first byte is asked for, against
	// what this file still needs plus what the other downloads of this
	// run have yet to write; a size learned only from the response is
	// checked when it arrives.
	var space *reservation
	defer func() { space.done() }()
	reserve := func() error {
		if space != nil || f.size < 0 {
			return nil
		}
		var err error
		if space, err = s.reserve(t, filepath.Dir(inc), f.size-off); err != nil && off == 0 {
			os.Remove(inc) // empty: leave no trace of a download that never started
		}
		return err
	}
	if err := reserve(); err != nil {
		return err
	}
	s.emit(progress.Event{Event: progress.FileStart, Repo: s.repo, File: f.path, Bytes: off, Total: f.size, ResumedFrom: off})

	bufs := newPipeBufs()
	restart := func() error {
		off = 0
		v.reset()
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return diskErr(fh.Truncate(0), inc)
	}
	src := s.resolveURL(f.path)
	err = s.c.withRetry(ctx, t.String(), s.onRetry(f.path), func() error {
		if f.size >= 0 && off == f.size {
			return nil
		}
		hdr := http.Header{}
		if off > 0 {
			hdr.Set("Range", fmt.Sprintf("bytes=%d-", off))
		}
		resp, err := s.c.do(ctx, http.MethodGet, src, hdr, true)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusPartialContent:
			start, total := parseContentRange(resp.Header.Get("Content-Range"))
			if off == 0 || start != off {
				if err := restart(); err != nil {
					return err
				}
				return &transient{err: fmt.Errorf("asked for bytes from %d, got a range from %d", off, start)}
			}
			if f.size < 0 && total >= 0 {
				f.size = total
			}
		case http.StatusOK:
			if off > 0 { // the server ignored Range: start over
				if err := restart(); err != nil {
					return err
				}
			}
			if f.size < 0 && resp.ContentLength >= 0 {
				f.size = resp.ContentLength
			}
		case http.StatusRequestedRangeNotSatisfiable:
			if err := restart(); err != nil {
				return err
			}
			return &transient{err: fmt.Errorf("range from %d not satisfiable", off)}
		default:
			return s.c.statusError(resp, t)
		}
		if err := reserve(); err != nil {
			return err
		}
		// The body may hold at most the bytes the Hub announced: a mirror
		// that says (or sends) more is refused before it fills the disk.
		limit := int64(-1)
		if f.size >= 0 {
			limit = f.size - off
			if resp.ContentLength > limit {
				return &checksumError{file: t.String(), wantSize: f.size, from: off, announced: resp.ContentLength}
			}
		}
		if _, err := fh.Seek(off, io.SeekStart); err != nil {
			return err
		}
		// A watchdog closes the body when no byte arrives for the stall timeout.
		stall := s.c.stallTimeout()
		var stalled atomic.Bool
		watchdog := time.AfterFunc(stall, func() { stalled.Store(true); resp.Body.Close() })
		n, rerr, werr := s.copyBody(fh, v, readWatched{resp.Body, watchdog, stall}, bufs, f, off, limit, space)
		watchdog.Stop()
		if stalled.Load() && rerr != nil && !errors.Is(rerr, errOverflow) {
			rerr = fmt.Errorf("no data for %v: %w", stall, rerr)
		}
		off += n
		res.Downloaded += n
		if werr != nil {
			return diskErr(werr, inc)
		}
		if errors.Is(rerr, errOverflow) {
			return &checksumError{file: t.String(), wantSize: f.size, over: true}
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &transient{err: fmt.Errorf("connection lost after %d of %s: %w", off, sizeStr(f.size), rerr), progress: n > 0}
		}
		if f.size >= 0 && off < f.size {
			return &transient{err: fmt.Errorf("body ended after %d of %d bytes", off, f.size), progress: n > 0}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.emit(progress.Event{Event: progress.Progress, Repo: s.repo, File: f.path, Bytes: off, Total: f.size})
	if f.size >= 0 && off != f.size {
		return &checksumError{file: t.String(), size: off, wantSize: f.size}
	}
	res.Size = off
	if v != nil {
		if got := v.sum(); got != v.want {
			return &checksumError{file: t.String(), algo: v.algo, got: got, want: v.want}
		}
	}
	if err := fh.Sync(); err != nil {
		return diskErr(err, inc)
	}
	if err := fh.Close(); err != nil {
		return diskErr(err, inc)
	}
	if err := os.Rename(inc, res.Blob); err != nil {
		return diskErr(err, res.Blob)
	}
	return atomicfile.SyncDir(filepath.Dir(res.Blob))
}

// adoptIncomplete resumes what a recent huggingface_hub left behind: it
// downloads to blobs/<etag>.<random>.incomplete, so a partial file it did not
// finish has a name nobody else will reuse. Called under the blob's lock,
// when no such file can still be growing, it renames the largest one to
// edgectl's stable name (the name older huggingface_hub versions use too).
func adoptIncomplete(inc, etag string) {
	if _, err := os.Lstat(inc); err == nil {
		return
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(inc), etag+".*.incomplete"))
	best, bestSize := "", int64(0)
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() && fi.Size() > bestSize {
			best, bestSize = m, fi.Size()
		}
	}
	if best != "" {
		os.Rename(best, inc)
	}
}

// copyBody streams src to dst and the verifier, reporting progress. Read and
// write errors are returned apart: a broken connection is retried, a full
// disk is not. Hashing runs on its own goroutine, a few buffers behind the
// writes, so the checksum costs little wall time where a core is free.
//
// limit (-1: unknown) is how many bytes the body may bring: the copy stops
// with errOverflow at the first byte past it, having written none of them.
func (s *session) copyBody(dst *os.File, v *verifier, src io.Reader, bufs pipeBufs, f *fileSpec, base, limit int64, space *reservation) (n int64, rerr, werr error) {
	work := make(chan []byte, len(bufs))
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		for b := range work {
			v.Write(b)
			bufs.put(b)
		}
	}()
	defer func() {
		close(work)
		<-hashed
	}()
	last := time.Now()
	for {
		buf := bufs.get()
		k, err := src.Read(buf)
		over := false
		if limit >= 0 && int64(k) > limit-n {
			k, over = int(limit-n), true
		}
		if k > 0 {
			if _, werr = dst.Write(buf[:k]); werr != nil {
				bufs.put(buf)
				return n, nil, werr
			}
			work <- buf[:k]
			n += int64(k)
			space.wrote(int64(k))
			if now := time.Now(); now.Sub(last) >= progress.Interval {
				last = now
				s.emit(progress.Event{Event: progress.Progress, Repo: s.repo, File: f.path, Bytes: base + n, Total: f.size})
			}
		} else {
			bufs.put(buf)
		}
		if over {
			return n, errOverflow, nil
		}
		if err == io.EOF {
			return n, nil, nil
		}
		if err != nil {
			return n, err, nil
		}
	}
}

// readWatched pushes the stall watchdog back on every read that brings bytes.
type readWatched struct {
	r     io.Reader
	t     *time.Timer
	stall time.Duration
}

func (w readWatched) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.t.Reset(w.stall)
	}
	return n, err
}

// pipeBufs is a small ring of buffers shared by the network reader and the
// hasher: memory per download stays at pipeDepth × pipeBufSize.
type pipeBufs chan []byte

const (
	pipeDepth   = 4
	pipeBufSize = 256 << 10
)

func newPipeBufs() pipeBufs {
	p := make(pipeBufs, pipeDepth)
	for range pipeDepth {
		p <- make([]byte, pipeBufSize)
	}
	return p
}

func (p pipeBufs) get() []byte  { return <-p }
func (p pipeBufs) put(b []byte) { p <- b[:cap(b)] }

// parseContentRange reads "bytes START-END/TOTAL"; TOTAL may be "*" (-1).
func parseContentRange(v string) (start, total int64) {
	start, total = -1, -1
	v, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return
	}
	rng, tot, ok := strings.Cut(v, "/")
	if !ok {
		return
	}
	a, _, ok := strings.Cut(rng, "-")
	if !ok {
		return
	}
	if n, err := strconv.ParseInt(a, 10, 64); err == nil {
		start = n
	}
	if n, err := strconv.ParseInt(tot, 10, 64); err == nil {
		total = n
	}
	return
}

// normalizeEtag strips the weak marker and quotes, as huggingface_hub does.
func normalizeEtag(e string) string {
	e = strings.TrimPrefix(strings.TrimSpace(e), "W/")
	return strings.Trim(e, `"`)
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func sizeStr(n int64) string {
	if n < 0 {
		return "an unknown size"
	}
	return strconv.FormatInt(n, 10)
}
