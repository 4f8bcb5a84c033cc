package hubtest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// takeFault consumes one count of the file's faults and says which apply.
func (s *Server) takeFault(path string) (f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.faults[path]
	if cur == nil {
		return Faults{}
	}
	f.IgnoreRange, f.BytesPerSec, f.RetryAfter, f.CutAfter, f.StallAfter = cur.IgnoreRange, cur.BytesPerSec, cur.RetryAfter, cur.CutAfter, cur.StallAfter
	f.ExtraBytes, f.ContentLength = cur.ExtraBytes, cur.ContentLength
	switch {
	case cur.RateLimit > 0:
		cur.RateLimit--
		f.RateLimit = 1
	case cur.ServerErrors > 0:
		cur.ServerErrors--
		f.ServerErrors = 1
	case cur.Cuts > 0:
		cur.Cuts--
		f.Cuts = 1
	case cur.Stalls > 0:
		cur.Stalls--
		f.Stalls = 1
	case cur.Corrupt > 0:
		cur.Corrupt--
		f.Corrupt = 1
	}
	return f
}

// parseRange reads "bytes=N-" or "bytes=N-M" (the forms download clients send).
func parseRange(h string, size int64) (start, end int64, ok bool) {
	v, found := strings.CutPrefix(h, "bytes=")
	if !found || strings.Contains(v, ",") {
		return 0, 0, false
	}
	a, b, _ := strings.Cut(v, "-")
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	end = size - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil {
			return 0, 0, false
		}
		end = min(end, size-1)
	}
	return start, end, true
}

// serveBytes writes a file's body, honouring Range and the faults.
func (s *Server) serveBytes(w http.ResponseWriter, r *http.Request, f *File) {
	s.active.Add(1)
	defer s.active.Add(-1)
	fault := s.takeFault(f.Path)
	if fault.RateLimit > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(fault.RetryAfter))
		hubError(w, http.StatusTooManyRequests, "", "rate limited")
		return
	}
	if fault.ServerErrors > 0 {
		hubError(w, http.StatusServiceUnavailable, "", "service unavailable")
		return
	}
	size := f.Content.Size()
	start, end := int64(0), size-1
	status := http.StatusOK
	if rh := r.Header.Get("Range"); rh != "" && !fault.IgnoreRange {
		var ok bool
		start, end, ok = parseRange(rh, size)
		if !ok || start >= size {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		status = http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, size))
	}
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Content-Type", "application/octet-stream")
	switch {
	case fault.ContentLength > 0:
		w.Header().Set("Content-Length", strconv.FormatInt(fault.ContentLength, 10))
	case fault.ExtraBytes == 0:
		w.Header().Set("Content-Length", strconv.FormatInt(end-start+1, 10))
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}

	body := io.Reader(io.NewSectionReader(f.Content, start, end-start+1))
	if fault.ExtraBytes > 0 {
		extra := Generated(uint64(size), fault.ExtraBytes)
		body = io.MultiReader(body, io.NewSectionReader(extra, 0, extra.Size()))
	}
	limit := int64(-1)
	if fault.Cuts > 0 {
		limit = fault.CutAfter
	}
	if fault.Stalls > 0 {
		limit = fault.StallAfter
	}
	corruptAt := int64(-1)
	if fault.Corrupt > 0 {
		corruptAt = size / 2
	}
	buf := make([]byte, 256<<10)
	if fault.BytesPerSec > 0 {
		buf = buf[:min(int64(len(buf)), max(fault.BytesPerSec/20, 4096))]
	}
	pos := start
	t0 := time.Now()
	var sent int64
	for {
		chunk := buf
		if limit >= 0 && sent+int64(len(chunk)) > limit {
			chunk = chunk[:limit-sent]
		}
		n, err := body.Read(chunk)
		if n > 0 {
			if corruptAt >= pos && corruptAt < pos+int64(n) {
				chunk[corruptAt-pos] ^= 0xff
			}
			// Counted before the write, so a client that has the bytes
			// always finds them counted.
			s.count(f.Path, int64(n))
			if _, werr := w.Write(chunk[:n]); werr != nil {
				return // the client is gone
			}
			pos += int64(n)
			sent += int64(n)
			if fault.BytesPerSec > 0 {
				w.(http.Flusher).Flush()
				if d := time.Duration(float64(sent)/float64(fault.BytesPerSec)*float64(time.Second)) - time.Since(t0); d > 0 {
					time.Sleep(d)
				}
			}
		}
		if limit >= 0 && sent >= limit {
			if fault.Stalls > 0 {
				// Hang with the connection open until the client gives up.
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
				return
			}
			s.cut(w)
			return
		}
		if err != nil {
			return
		}
	}
}

// cut ends the connection mid-body: the client sees fewer bytes than
// Content-Length announced.
func (s *Server) cut(w http.ResponseWriter) {
	w.(http.Flusher).Flush()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

func (s *Server) count(path string, n int64) {
	s.mu.Lock()
	s.served[path] += n
	s.mu.Unlock()
	s.total.Add(n)
}

// WaitIdle waits until no file body is being sent, so that counters read
// afterwards cannot still move (a handler for a killed client may be
// mid-write). It gives up after ten seconds.
func (s *Server) WaitIdle() {
	for deadline := time.Now().Add(10 * time.Second); s.active.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}
