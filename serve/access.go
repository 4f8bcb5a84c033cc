package serve

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Browsers and DNS rebinding. A web page may send any "simple" request
// (a text/plain POST) to 127.0.0.1 without asking, and a hostile name
// that resolves to 127.0.0.1 makes the server same-origin with the page.
// So: a request carrying an Origin that is not allowed is refused (403)
// before it runs, preflights are answered for allowed origins only, and
// without an API key a Host that does not name this machine is refused.

// defaultOrigins are the origins allowed without configuration, as Ollama
// allows them: local pages on any port, and desktop-app webviews.
func defaultOrigins() []string {
	var out []string
	for _, h := range []string{"localhost", "127.0.0.1", "[::1]", "0.0.0.0"} {
		for _, scheme := range []string{"http", "https"} {
			out = append(out, scheme+"://"+h, scheme+"://"+h+":*")
		}
	}
	return append(out, "app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*")
}

// originAllowed matches origin against patterns: "*" allows every origin;
// one "*" elsewhere matches any text ("chrome-extension://*"), except at
// the end of "HOST:*", where it matches a port number. Case is ignored.
func originAllowed(patterns []string, origin string) bool {
	origin = strings.ToLower(origin)
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(p), "/"))
		switch {
		case p == "":
		case p == "*" || p == origin:
			return true
		case strings.Count(p, "*") == 1:
			pre, suf, _ := strings.Cut(p, "*")
			if len(origin) < len(pre)+len(suf) || !strings.HasPrefix(origin, pre) || !strings.HasSuffix(origin, suf) {
				continue
			}
			mid := origin[len(pre) : len(origin)-len(suf)]
			if strings.HasSuffix(pre, ":") && suf == "" && !isPort(mid) {
				continue
			}
			return true
		}
	}
	return false
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// hostAllowed reports whether a Host header names this machine: a
// loopback name or address, an address the server listens on, or a name
// the user allowed ("*" allows all; "*.example" and ".example" a domain).
func (s *Server) hostAllowed(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	switch {
	case h == "": // HTTP/1.0 without Host: not a browser
		return true
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return true
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Unmap().IsLoopback() {
		return true
	}
	if b := s.bound.Load(); b != nil {
		for _, a := range *b {
			if h == a {
				return true
			}
		}
	}
	for _, a := range s.opts.AllowedHosts {
		a = strings.TrimSuffix(strings.ToLower(strings.Trim(strings.TrimSpace(a), "[]")), ".")
		switch {
		case a == "*" || a == h:
			return true
		case strings.HasPrefix(a, "*."):
			a = a[1:]
			fallthrough
		case strings.HasPrefix(a, "."):
			if strings.HasSuffix(h, a) {
				return true
			}
		}
	}
	return false
}

// checkHost refuses, when no API key is set, requests whose Host does not
// name this machine (DNS rebinding). With a key, the key is the guard.
func (s *Server) checkHost(next http.Handler) http.Handler {
	if s.opts.APIKey != "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.hostAllowed(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		refuse(w, r, http.StatusForbidden, fmt.Sprintf("Host %q is not this machine: without an API key edgectl answers only requests addressed to localhost or a loopback address (a defence against DNS rebinding); allow the name with --allowed-hosts or EDGECTL_ALLOWED_HOSTS, or set --api-key", r.Host))
	})
}

// cors answers preflights and refuses requests from origins not allowed.
// Requests without an Origin (curl, SDKs, servers) pass untouched.
func (s *Server) cors(next http.Handler) http.Handler {
	patterns := append(defaultOrigins(), s.opts.Origins...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		h := w.Header()
		if origin == "" {
			if r.Method == http.MethodOptions {
				h.Set("Allow", "GET, HEAD, POST, OPTIONS")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		h.Add("Vary", "Origin")
		if !originAllowed(patterns, origin) && !sameOrigin(origin, r.Host) {
			refuse(w, r, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed: edgectl answers browsers only from local pages and apps; allow it with --origins or EDGECTL_ORIGINS", origin))
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		if r.Method == http.MethodOptions {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS")
			if rh := requestedHeaders(r.Header.Get("Access-Control-Request-Headers")); rh != "" {
				h.Set("Access-Control-Allow-Headers", rh)
			}
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", "Retry-After")
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin is the server's own (the chat page at
// /, opened by a LAN address or name): safe to allow, since checkHost has
// already refused foreign Hosts when there is no API key, and with one the
// key guards the API.
func sameOrigin(origin, host string) bool {
	return host != "" && (strings.EqualFold(origin, "http://"+host) || strings.EqualFold(origin, "https://"+host))
}

// requestedHeaders echoes a preflight's header list when every name in it
// is a plain header name (the origin is allowed; its headers are too).
func requestedHeaders(list string) string {
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		for _, c := range n {
			if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return ""
			}
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// refuse answers a request a middleware stops, in its route's dialect:
// Anthropic's error under /v1/messages, OpenAI's error object elsewhere
// under /v1/, Ollama's {"error": …} elsewhere.
func refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if isAnthropicPath(r.URL.Path) {
		writeAnthropicError(w, code, msg)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		writeOpenAIError(w, code, msg)
		return
	}
	writeOllamaError(w, code, msg)
}
