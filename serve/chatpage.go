package serve

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The chat page: one HTML file with its style and script inline, embedded
// in the binary (no build step, nothing fetched from elsewhere). Browsers
// asking for GET / get it; other clients (Ollama clients probe / for
// "is it up") keep the plain-text answer.
//
// Its Content-Security-Policy allows the inline <style> and <script> by
// their SHA-256, computed here from the embedded file at start-up, so the
// page stays one file and the policy cannot drift from it when the page is
// edited; everything else is 'self' or nothing: no 'unsafe-inline', no
// eval, no other origin, no framing.

//go:embed chatpage/index.html
var chatPageHTML []byte

var (
	chatPageCSP  = chatPagePolicy(chatPageHTML)
	chatPageETag = fmt.Sprintf(`"%x"`, sha256.Sum256(chatPageHTML))
)

// chatPagePolicy builds the page's CSP from the hashes of its inline
// <script> and <style> blocks (each exactly as it appears between the
// tags, as browsers hash them).
func chatPagePolicy(page []byte) string {
	hashes := func(tag string) string {
		var out []string
		rest := page
		for {
			i := bytes.Index(rest, []byte("<"+tag+">"))
			if i < 0 {
				break
			}
			rest = rest[i+len(tag)+2:]
			j := bytes.Index(rest, []byte("</"+tag+">"))
			if j < 0 {
				break
			}
			sum := sha256.Sum256(rest[:j])
			out = append(out, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
			rest = rest[j:]
		}
		if len(out) == 0 {
			return "'none'"
		}
		return strings.Join(out, " ")
	}
	return "default-src 'none'; script-src " + hashes("script") + "; style-src " + hashes("style") +
		"; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// wantsHTML reports whether a GET / comes from a browser: its Accept names
// text/html (curl, SDKs and Ollama clients send */* or nothing).
func wantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(mt), "text/html") {
			continue
		}
		refused := false // text/html;q=0 says "not HTML"
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); strings.EqualFold(strings.TrimSpace(k), "q") && err == nil && q == 0 {
				refused = true
			}
		}
		return !refused
	}
	return false
}

// isChatPage reports whether r asks for / itself, which needs no API key:
// the page holds no secret and asks for the key when the API refuses it;
// the plain-text answer says no more than the open /health does.
func isChatPage(r *http.Request) bool {
	return r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// handleRoot answers GET /: the chat page to browsers, "edgectl is
// running" to everything else.
func (s *Server) handleRoot(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Accept")
	h.Set("X-Content-Type-Options", "nosniff")
	if !wantsHTML(r) {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		fmt.Fprint(w, "edgectl is running")
		return
	}
	h.Set("Content-Security-Policy", chatPageCSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	// The page changes with the binary: revalidate each time (a 304 when
	// this build's page is the one cached).
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", chatPageETag)
	if etagMatches(r.Header.Get("If-None-Match"), chatPageETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.Write(chatPageHTML)
}

func etagMatches(ifNoneMatch, etag string) bool {
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
