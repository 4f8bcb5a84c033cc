package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// readBody reads a request's body before its handler runs, within
// Options.MaxBody (413 beyond it) and Options.BodyTimeout (408 when the
// client sends it too slowly: a 1-byte/s body must not hold a connection
// and a goroutine for ever). The deadline covers the body only and is
// lifted once it is read; answers have none (the http.Server has no
// WriteTimeout, which would cut long streams). Doing this here rather than
// with http.Server.ReadTimeout answers 408 in the route's dialect instead
// of dropping the connection, and holds for any server the Handler runs in.
func (s *Server) readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		limit := s.opts.MaxBody
		if r.ContentLength > limit {
			w.Header().Set("Connection", "close") // the body stays unread
			refuse(w, r, http.StatusRequestEntityTooLarge, tooLarge(r.ContentLength, limit))
			return
		}
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)) // not supported: no deadline, as before
		var buf bytes.Buffer
		if r.ContentLength > 0 {
			buf.Grow(int(r.ContentLength))
		}
		_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
		// On failure the deadline stays: the server drains what is left of
		// a refused body before closing, and must not wait on a slow client.
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			refuse(w, r, http.StatusRequestEntityTooLarge, tooLarge(-1, limit))
			return
		case errors.As(err, &ne) && ne.Timeout():
			w.Header().Set("Connection", "close")
			refuse(w, r, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %v (%d bytes came): send the whole body without pauses", s.opts.BodyTimeout, buf.Len()))
			return
		case err != nil:
			w.Header().Set("Connection", "close")
			refuse(w, r, http.StatusBadRequest, fmt.Sprintf("reading the request body: %v", err))
			return
		}
		rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(&buf)
		r.ContentLength = int64(buf.Len())
		next.ServeHTTP(w, r)
	})
}

func tooLarge(size, limit int64) string {
	what := "request body"
	if size > 0 {
		what = fmt.Sprintf("request body of %d bytes", size)
	}
	return fmt.Sprintf("%s is over the limit of %d bytes (%s): send less, or raise serve --max-body", what, limit, mib(limit))
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
