package serve

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// do sends one request with the given method, headers (pairs; "Host"
// sets the Host header) and body, and returns status, headers and body.
func do(t *testing.T, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body = http.NoBody
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestCORSPreflightAndOrigins(t *testing.T) {
	ts := tinyServer(t)
	for _, origin := range []string{"http://localhost:5173", "http://127.0.0.1", "https://[::1]:8443", "HTTP://LOCALHOST:3000",
		"app://obsidian.md", "tauri://localhost", "file://"} {
		code, h, _ := do(t, http.MethodOptions, ts.URL+"/v1/chat/completions", "", "Origin", origin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type, x-stainless-os")
		if code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != origin ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
			h.Get("Access-Control-Allow-Headers") != "authorization, content-type, x-stainless-os" {
			t.Errorf("preflight from %s: %d %v", origin, code, h)
		}
	}
	// An allowed origin's real request carries the header too.
	code, h, _ := do(t, http.MethodGet, ts.URL+"/api/tags", "", "Origin", "http://localhost:8080")
	if code != 200 || h.Get("Access-Control-Allow-Origin") != "http://localhost:8080" || !strings.Contains(h.Get("Vary"), "Origin") {
		t.Errorf("GET from a local page: %d %v", code, h)
	}
	// Foreign origins, and look-alikes of the local ones, are refused in
	// the route's dialect, preflight or not.
	for _, origin := range []string{"https://evil.example", "http://localhost.evil.example", "http://localhost:80.evil.example",
		"http://127.0.0.1.nip.io", "null", "chrome-extension://abc"} {
		code, h, body := do(t, http.MethodOptions, ts.URL+"/api/chat", "", "Origin", origin, "Access-Control-Request-Method", "POST")
		if code != http.StatusForbidden || h.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(body, `"error":"origin`) {
			t.Errorf("preflight from %s: %d %v %s", origin, code, h, body)
		}
		code, _, body = do(t, http.MethodGet, ts.URL+"/v1/models", "", "Origin", origin)
		if code != http.StatusForbidden || !strings.Contains(body, `"type":"invalid_request_error"`) || !strings.Contains(body, "--origins") {
			t.Errorf("GET from %s: %d %s", origin, code, body)
		}
	}
	// A page cannot use a "simple" request (no preflight) to generate.
	code, _, body := do(t, http.MethodPost, ts.URL+"/api/generate", `{"model":"tinystories","prompt":"Once"}`,
		"Origin", "https://evil.example", "Content-Type", "text/plain")
	if code != http.StatusForbidden || !strings.Contains(body, "not allowed") {
		t.Errorf("text/plain POST from a foreign page: %d %s", code, body)
	}
	if got := psNames(t, ts); len(got) != 0 {
		t.Errorf("the refused request loaded %v", got)
	}
	// Without an Origin (curl, SDKs) OPTIONS just lists the methods.
	if code, h, _ := do(t, http.MethodOptions, ts.URL+"/api/chat", ""); code != http.StatusNoContent || h.Get("Allow") == "" {
		t.Errorf("OPTIONS without Origin: %d %v", code, h)
	}
	if got := metric(t, ts, `edgectl_requests_total{route="/api/generate",model="unknown",code="403"}`); got != "1" {
		t.Errorf("refused generate counted %s", got)
	}
	if got := metric(t, ts, `edgectl_requests_total{route="/v1/chat/completions",model="unknown",code="204"}`); got != "7" {
		t.Errorf("preflights counted %s under their route", got)
	}
}

func TestCORSOriginsOption(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	ts := start(t, Options{ModelDirs: []string{root}, Origins: []string{"https://chat.example.com", "chrome-extension://*"}, APIKey: "k"})
	for origin, ok := range map[string]bool{
		"https://chat.example.com": true, "chrome-extension://abcdef": true, "http://localhost:3000": true,
		"https://chat.example.com.evil": false, "http://chat.example.com": false,
	} {
		// A preflight needs no key: browsers never send one with it.
		code, h, _ := do(t, http.MethodOptions, ts.URL+"/v1/chat/completions", "", "Origin", origin, "Access-Control-Request-Method", "POST")
		if (code == http.StatusNoContent) != ok || (h.Get("Access-Control-Allow-Origin") == origin) != ok {
			t.Errorf("%s: %d %v, allowed %v", origin, code, h, ok)
		}
	}
	code, _, body := do(t, http.MethodPost, ts.URL+"/v1/chat/completions", `{"model":"tinystories","max_tokens":2,"messages":[{"role":"user","content":"Once"}]}`,
		"Origin", "https://chat.example.com", "Authorization", "Bearer k", "Content-Type", "application/json")
	if code != 200 {
		t.Errorf("allowed origin with key: %d %s", code, body)
	}
	if code, _, _ := do(t, http.MethodGet, ts.URL+"/v1/models", "", "Origin", "https://chat.example.com"); code != http.StatusUnauthorized {
		t.Errorf("allowed origin without key: %d", code)
	}
	ts2 := start(t, Options{ModelDirs: []string{root}, Origins: []string{"*"}})
	if code, _, _ := do(t, http.MethodGet, ts2.URL+"/api/tags", "", "Origin", "https://anything.example"); code != 200 {
		t.Errorf(`origins "*": %d`, code)
	}
}

// DNS rebinding: without a key, only requests addressed to this machine
// run; with a key, the key guards and any Host may be used.
func TestHostCheck(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	ts := start(t, Options{ModelDirs: []string{root}, AllowedHosts: []string{"mybox.lan", "*.tail.example"}})
	ts.bound.Store(&[]string{"192.0.2.7"}) // as Serve records a specific listening address
	for host, ok := range map[string]bool{
		"localhost:11434": true, "LOCALHOST": true, "app.localhost:80": true, "127.0.0.1:11434": true, "127.8.9.10": true,
		"[::1]:11434": true, "[::ffff:127.0.0.1]:1": true, "mybox.lan:11434": true, "box.tail.example": true, "192.0.2.7:11434": true,
		"localhost.:11434":       true,
		"attacker.example:11434": false, "127.0.0.1.attacker.example": false, "192.168.1.5:11434": false, "0.0.0.0:11434": false,
		"mybox.lan.attacker.example": false, "tail.example.evil": false, "localhost.evil": false, "[::]:11434": false,
	} {
		code, _, body := do(t, http.MethodGet, ts.URL+"/api/version", "", "Host", host)
		if (code == 200) != ok || (!ok && (code != http.StatusForbidden || !strings.Contains(body, "--allowed-hosts"))) {
			t.Errorf("Host %s: %d %s, allowed %v", host, code, body, ok)
		}
	}
	// The rebinding attack itself: a page on attacker.example, now
	// resolving to 127.0.0.1, posts to "its own" origin.
	code, _, body := do(t, http.MethodPost, ts.URL+"/v1/chat/completions", `{"model":"tinystories","messages":[{"role":"user","content":"x"}]}`,
		"Host", "attacker.example:11434", "Origin", "http://attacker.example:11434", "Content-Type", "text/plain")
	if code != http.StatusForbidden || !strings.Contains(body, `"type":"invalid_request_error"`) {
		t.Errorf("rebinding POST: %d %s", code, body)
	}

	keyed := start(t, Options{ModelDirs: []string{root}, APIKey: "k"})
	code, _, body = do(t, http.MethodGet, keyed.URL+"/api/version", "", "Host", "edge.example:11434", "Authorization", "Bearer k")
	if code != 200 {
		t.Errorf("with a key, any Host: %d %s", code, body)
	}
	if code, _, _ := do(t, http.MethodGet, keyed.URL+"/api/version", "", "Host", "edge.example:11434"); code != http.StatusUnauthorized {
		t.Errorf("with a key, foreign Host and no key: %d", code)
	}
}
