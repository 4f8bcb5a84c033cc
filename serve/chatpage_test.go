package serve

import (
	"crypto/sha256"
	"encoding/base64"
	"image/png"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
)

// pageServer serves the TinyStories fixture on the cpu lane alone, with
// apiKey ("" for none).
func pageServer(t *testing.T, apiKey string) *testServer {
	t.Helper()
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	return start(t, Options{ModelDirs: []string{root}, APIKey: apiKey, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
}

// pageReq sends one request and returns the answer with its body read.
func pageReq(t *testing.T, method, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
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
	return resp, string(b)
}

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func TestChatPageForBrowsersPlainTextForClients(t *testing.T) {
	ts := pageServer(t, "")
	resp, body := pageReq(t, "GET", ts.URL+"/", "Accept", browserAccept)
	h := resp.Header
	if resp.StatusCode != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, `<select id="model"`) {
		t.Fatalf("browser GET /: %d %q %.80q", resp.StatusCode, h.Get("Content-Type"), body)
	}
	for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache",
		"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Vary": "Accept"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	etag := h.Get("ETag")
	if resp, _ := pageReq(t, "GET", ts.URL+"/", "Accept", "text/html", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s: %d, want 304", etag, resp.StatusCode)
	}

	for _, accept := range []string{"", "*/*", "application/json", "text/html;q=0, */*"} {
		resp, body := pageReq(t, "GET", ts.URL+"/", "Accept", accept)
		if resp.StatusCode != 200 || body != "edgectl is running" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Errorf("Accept %q: %d %q %q", accept, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if resp.Header.Get("Content-Security-Policy") != "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("Accept %q: headers %v", accept, resp.Header)
		}
	}
	for _, accept := range []string{"", browserAccept} {
		if resp, body := pageReq(t, "HEAD", ts.URL+"/", "Accept", accept); resp.StatusCode != 200 || body != "" {
			t.Errorf("HEAD / (Accept %q): %d %q", accept, resp.StatusCode, body)
		}
	}
}

// The policy allows exactly the page's own inline script and style (by
// hash, recomputed here from the file as a browser would), nothing inline
// otherwise and no other origin; the page names no outside resource.
func TestChatPageCSP(t *testing.T) {
	ts := pageServer(t, "")
	resp, body := pageReq(t, "GET", ts.URL+"/", "Accept", "text/html")
	csp := resp.Header.Get("Content-Security-Policy")
	for _, tag := range []string{"script", "style"} {
		m := regexp.MustCompile(`(?s)<`+tag+`>(.*?)</`+tag+`>`).FindAllStringSubmatch(body, -1)
		if len(m) != 1 {
			t.Fatalf("%d <%s> blocks, want 1", len(m), tag)
		}
		sum := sha256.Sum256([]byte(m[0][1]))
		want := tag + "-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "';"
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	for _, want := range []string{"default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") || strings.Contains(csp, "http") {
		t.Errorf("CSP %q allows inline code, eval or another origin", csp)
	}
	for _, m := range regexp.MustCompile(`(?i)\b(src|href|action)\s*=\s*["']?([^"' >]*)`).FindAllStringSubmatch(body, -1) {
		if !strings.HasPrefix(m[2], "data:") {
			t.Errorf("the page loads %s=%q: it must be one self-contained file", m[1], m[2])
		}
	}
	if regexp.MustCompile(`\binnerHTML\b|\bouterHTML\b|insertAdjacentHTML|document\.write|\beval\(`).MatchString(body) {
		t.Error("the page writes HTML from strings: model text must only be set with textContent")
	}
}

func TestChatPageNeedsNoKeyButTheAPIDoes(t *testing.T) {
	ts := pageServer(t, "k3y")
	if resp, body := pageReq(t, "GET", ts.URL+"/", "Accept", browserAccept); resp.StatusCode != 200 || !strings.Contains(body, "<html") {
		t.Errorf("page without key: %d", resp.StatusCode)
	}
	if resp, body := pageReq(t, "GET", ts.URL+"/"); resp.StatusCode != 200 || body != "edgectl is running" {
		t.Errorf("plain / without key: %d %q", resp.StatusCode, body)
	}
	if resp, _ := pageReq(t, "HEAD", ts.URL+"/"); resp.StatusCode != 200 {
		t.Errorf("HEAD / without key: %d", resp.StatusCode)
	}
	if resp, _ := pageReq(t, "GET", ts.URL+"/v1/models"); resp.StatusCode != 401 {
		t.Errorf("/v1/models without key: %d, want 401", resp.StatusCode)
	}
	if resp, _ := pageReq(t, "GET", ts.URL+"/v1/models", "Authorization", "Bearer k3y"); resp.StatusCode != 200 {
		t.Errorf("/v1/models with key: %d", resp.StatusCode)
	}
	code, _, _ := post(t, ts.URL+"/v1/chat/completions", `{"model":"tinystories","messages":[{"role":"user","content":"x"}],"max_tokens":1}`)
	if code != 401 {
		t.Errorf("chat without key: %d, want 401", code)
	}
	// Only / itself is open: other methods and paths still need the key.
	if code, _, _ := post(t, ts.URL+"/", "{}"); code != 401 {
		t.Errorf("POST / without key: %d, want 401", code)
	}
	if resp, _ := pageReq(t, "GET", ts.URL+"/index.html"); resp.StatusCode != 401 {
		t.Errorf("/index.html without key: %d, want 401", resp.StatusCode)
	}
}

// The page opened by a LAN name (serve --addr 0.0.0.0:… --api-key) calls
// the API from its own origin, which no --origins lists: allowed. Other
// origins stay refused, and without a key a foreign Host is refused
// before the origin matters (DNS rebinding).
func TestChatPageSameOriginAPICalls(t *testing.T) {
	keyed := pageServer(t, "k3y")
	const host = "edge.lan:11434"
	if resp, body := pageReq(t, "GET", keyed.URL+"/v1/models", "Host", host, "Origin", "http://"+host, "Authorization", "Bearer k3y"); resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://"+host {
		t.Errorf("same origin: %d %s", resp.StatusCode, body)
	}
	if resp, _ := pageReq(t, "GET", keyed.URL+"/v1/models", "Host", host, "Origin", "http://evil.example", "Authorization", "Bearer k3y"); resp.StatusCode != 403 {
		t.Errorf("other origin: %d, want 403", resp.StatusCode)
	}
	open := pageServer(t, "")
	for _, p := range []string{"/", "/v1/models"} {
		if resp, _ := pageReq(t, "GET", open.URL+p, "Host", "evil.example", "Origin", "http://evil.example", "Accept", "text/html"); resp.StatusCode != 403 {
			t.Errorf("%s from a rebinding name without a key: %d, want 403", p, resp.StatusCode)
		}
	}
}

func TestWantsHTML(t *testing.T) {
	for accept, want := range map[string]bool{
		"": false, "*/*": false, "text/plain": false, "application/json, text/*": false,
		"text/html": true, browserAccept: true, "TEXT/HTML; charset=utf-8": true,
		"text/html;q=0": false, "text/html; q=0.0, */*": false, "text/html;q=0.5": true,
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", accept)
		if got := wantsHTML(r); got != want {
			t.Errorf("Accept %q: %v, want %v", accept, got, want)
		}
	}
}

// docs/images/chat-page.png is what TestChatPageScreenshot writes: a PNG
// of the 1000×700 viewport, small enough for the repository.
func TestChatPageScreenshotFile(t *testing.T) {
	const path = "../docs/images/chat-page.png"
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v: regenerate it with `go test ./serve -run TestChatPageScreenshot -args -update-screenshot` (needs `make test-browser`'s Chromium)", err)
	}
	defer f.Close()
	st, _ := f.Stat()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if cfg.Width != 1000 || cfg.Height != 700 || st.Size() > 150<<10 {
		t.Errorf("%s: %d×%d, %d bytes; want 1000×700 under 150 KiB", path, cfg.Width, cfg.Height, st.Size())
	}
}
