package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/edgectl/edgectl/internal/clip"
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

// absPath finds absolute file-system paths in a message: a slash after
// the start, a space, a quote, '(' or '=' and at least two components.
var absPath = regexp.MustCompile(`(^|[\s"'(=])(/[^\s"'()/]+(?:/[^\s"'():,;]+)+)`)

// clientMessage is err's message as an API client sees it. The server's
// file-system paths are not the client's business: a model's path becomes
// its name, a models directory "<models>", and any other absolute path
// whose top directory exists here ".../BASENAME"; the server log keeps the
// full message when anything was hidden. The message is one line, at most
// clip.MaxMessage bytes.
func (s *Server) clientMessage(err error) string {
	msg := err.Error()
	out := msg
	if s.reg != nil {
		entries := s.reg.List()
		sort.Slice(entries, func(i, j int) bool { return len(entries[i].Path) > len(entries[j].Path) })
		for _, e := range entries {
			if filepath.IsAbs(e.Path) {
				out = strings.ReplaceAll(out, e.Path, e.Name)
			}
		}
	}
	for _, d := range s.opts.ModelDirs {
		if abs, err := filepath.Abs(d); err == nil && abs != "/" {
			out = strings.ReplaceAll(out, abs, "<models>")
		}
	}
	out = absPath.ReplaceAllStringFunc(out, func(m string) string {
		i := strings.IndexByte(m, '/')
		p := m[i:]
		top := p[:strings.IndexByte(p[1:], '/')+1]
		if _, err := os.Stat(top); err != nil {
			return m // not a path of this machine ("/v1/models")
		}
		return m[:i] + ".../" + filepath.Base(p)
	})
	if out != msg && s.opts.Logf != nil {
		s.opts.Logf("error (paths hidden from the client): %s", clip.Text(strings.ReplaceAll(msg, "\n", " ")))
	}
	return clipMessage(out)
}

// clipMessage keeps a message on one line and within clip.MaxMessage
// bytes, every overlong word clipped with its length (internal/clip).
func clipMessage(msg string) string { return clip.Message(msg) }
