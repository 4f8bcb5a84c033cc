package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/upstream"
)

// The chat page in a real browser: Debian's Chromium, headless, driven over
// the DevTools protocol, against the real server on the TinyStories
// fixture. `make test-browser` installs Chromium and runs these; without
// it they skip.

var updateScreenshot = flag.Bool("update-screenshot", false, "TestChatPageScreenshot writes docs/images/chat-page.png")

// chromium finds a Chromium or Chrome on PATH, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium, chromium-browser or google-chrome on PATH: `make test-browser` installs Debian's Chromium (scripts/install-chromium.sh) and runs the browser tests")
	return ""
}

// browserTab is one headless tab, and what the page wrote to its console.
type browserTab struct {
	ctx context.Context
	mu  sync.Mutex
	log []chromedp.ConsoleMessage
}

// openTab starts a headless Chromium with a 1000×700 viewport, a profile
// in t.TempDir(), and a bound on the whole test's time. Its HOME and
// TMPDIR are a t.TempDir() too: Chromium leaves its shared-memory files
// (org.chromium.Chromium.*) and crash-report settings there, and a
// browser killed at the end never removes them.
func openTab(t *testing.T) *browserTab {
	path := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	home := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Env("HOME="+home, "TMPDIR="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home),
		chromedp.Flag("headless", "new"),
		chromedp.DisableGPU,
		// Chromium's sandbox cannot start as root (containers, CI): only then.
		chromedp.Flag("no-sandbox", os.Getuid() == 0),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 700),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel) // waits for the browser to exit, before t.TempDir() goes
	tctx, tcancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(tcancel)
	tab := &browserTab{ctx: tctx}
	messages := chromedp.Console(tctx) // starts the browser
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			tab.mu.Lock()
			tab.log = append(tab.log, m)
			tab.mu.Unlock()
		}
	}()
	if err := chromedp.Do(tctx, chromedp.EmulateViewport(1000, 700)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return tab
}

// checkConsole fails on uncaught exceptions and on anything the CSP
// blocked (the inline script and style must match their hashes).
func (b *browserTab) checkConsole(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.log {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			t.Errorf("browser console: %s", m)
		}
	}
}

func (b *browserTab) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.checkConsole(t)
		html, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, html)
	}
}

// waitFor polls a page expression until it is truthy (20 s at most).
func waitFor(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))
}

// pressEnter is a bare Enter: keydown then keyup, no character, as a
// keyboard sends it to a handler that cancels it.
var pressEnter = chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}); err != nil {
			return err
		}
	}
	return nil
})

// pageView is what the test reads back from the page.
type pageView struct {
	Answer   string `json:"answer"`
	Updates  int    `json:"updates"`
	Turns    int    `json:"turns"`
	Prompt   string `json:"prompt"`
	TTFT     string `json:"ttft"`
	TPS      string `json:"tps"`
	Lane     string `json:"lane"`
	RAM      string `json:"ram"`
	Health   string `json:"health"`
	HostRAM  string `json:"hostRAM"`
	Lanes    string `json:"lanes"`
	Streamed bool   `json:"streamed"`
}

const readView = `(() => {
  const t = (id) => document.getElementById(id).textContent;
  const a = [...document.querySelectorAll('.msg.assistant .text')].pop();
  return { answer: a ? a.textContent : '', updates: window.__updates || 0, turns: state.history.length,
    prompt: document.getElementById('prompt').value, ttft: t('ttft'), tps: t('tps'), lane: t('lane'),
    ram: t('req-ram'), health: t('health-status'), hostRAM: t('h-ram'), lanes: t('h-lanes'),
    streamed: !document.querySelector('.msg.streaming') };
})()`

// countUpdates counts the times the page rewrites an answer while it
// streams (each delta, not one write at the end).
const countUpdates = `window.__updates = 0;
window.__observer = window.__observer || new MutationObserver((rs) => {
  for (const r of rs) if (r.target.closest && r.target.closest('.msg.assistant')) window.__updates++;
});
window.__observer.observe(document.getElementById('log'), { childList: true, subtree: true, characterData: true }); true`

// chat types prompt, sends it with Enter, waits for the whole streamed
// answer and the telemetry it brings, and reads the page back.
func (b *browserTab) chat(t *testing.T, prompt string, maxTokens int) pageView {
	t.Helper()
	turns, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`state.history.length`))
	if err != nil {
		t.Fatal(err)
	}
	b.do(t, "send "+prompt,
		chromedp.Evaluate[chromedp.Void](countUpdates),
		chromedp.SetValue(chromedp.ID("max-tokens"), strconv.Itoa(maxTokens)),
		chromedp.SendKeys(chromedp.ID("prompt"), prompt),
		pressEnter,
		waitFor(`document.querySelectorAll('.msg.assistant').length > 0 && !document.querySelector('.msg.streaming') && state.history.length > `+strconv.Itoa(turns)),
		waitFor(`/^\d+ ms$/.test(document.getElementById('ttft').textContent) && document.getElementById('health-status').textContent === 'ok'`),
	)
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[pageView](readView))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page: %+v", v)
	number := regexp.MustCompile(`^\d+(\.\d+)? `)
	switch {
	case v.Answer == "" || v.Turns != turns+2 || v.Prompt != "":
		t.Errorf("answer %q, %d turns (want %d), prompt left %q", v.Answer, v.Turns, turns+2, v.Prompt)
	case v.Updates < 2:
		t.Errorf("the answer was written %d times: not streamed", v.Updates)
	case !number.MatchString(v.TTFT) || !strings.HasSuffix(v.TPS, "tok/s") || !number.MatchString(v.TPS):
		t.Errorf("telemetry panel: TTFT %q, tok/s %q", v.TTFT, v.TPS)
	case v.Lane != LaneCPU || !number.MatchString(v.RAM):
		t.Errorf("telemetry panel: lane %q, RAM %q", v.Lane, v.RAM)
	case v.Health != "ok" || !strings.Contains(v.Lanes, LaneCPU) || !number.MatchString(v.HostRAM):
		t.Errorf("health panel: %q, lanes %q, RAM %q", v.Health, v.Lanes, v.HostRAM)
	}
	return v
}

// pickModel waits for the model list and picks id in it.
func (b *browserTab) pickModel(t *testing.T, id string) {
	t.Helper()
	b.do(t, "model list", waitFor(`document.getElementById('model').options.length > 0`))
	picked, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`(() => {
  const s = document.getElementById('model');
  s.value = `+strconv.Quote(id)+`;
  s.dispatchEvent(new Event('change'));
  return [s.value, ...[...s.options].map((o) => o.value + '=' + o.textContent)];
})()`))
	if err != nil || len(picked) == 0 || picked[0] != id {
		t.Fatalf("model picker: %q %v", picked, err)
	}
}

func TestChatPageInBrowser(t *testing.T) {
	b := openTab(t)
	ts := pageServer(t, "")
	b.do(t, "load /", chromedp.Navigate(ts.URL+"/"))
	b.pickModel(t, "tinystories:latest")

	// Shift+Enter is a new line, not a send.
	b.do(t, "shift+enter",
		chromedp.SendKeys(chromedp.ID("prompt"), "Once upon a time"),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.SendKeys(chromedp.ID("prompt"), "there was"),
	)
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]any](`[document.getElementById('prompt').value, document.querySelectorAll('.msg').length]`))
	if err != nil || len(got) != 2 || got[0] != "Once upon a time\nthere was" || got[1] != float64(0) {
		t.Fatalf("after Shift+Enter: %v %v", got, err)
	}
	b.do(t, "clear", chromedp.Evaluate[chromedp.Void](`document.getElementById('prompt').value = ''`))

	b.chat(t, "Once upon a time", 24)
	b.chat(t, "The little dog", 24) // the history goes with it: 4 turns
	b.checkConsole(t)
}

func TestChatPageInBrowserAsksForKey(t *testing.T) {
	b := openTab(t)
	ts := pageServer(t, "s3cret")
	b.do(t, "load / and answer the key prompt with a wrong key",
		chromedp.Navigate(ts.URL+"/"),
		waitFor(`!document.getElementById('key-form').hidden`),
		chromedp.SendKeys(chromedp.ID("key"), "wrong\r"),
		waitFor(`!document.getElementById('key-form').hidden && /refused/.test(document.getElementById('key-note').textContent)`),
		chromedp.SendKeys(chromedp.ID("key"), "s3cret\r"),
	)
	b.pickModel(t, "tinystories:latest")
	b.chat(t, "Once upon a time", 24)
	stored, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`sessionStorage.getItem('edgectl-api-key')`))
	if err != nil || stored != "s3cret" {
		t.Errorf("sessionStorage key %q %v", stored, err)
	}
	b.checkConsole(t)
}

// Model text is untrusted: markup in it shows as text and creates no
// element. Stop aborts the stream, and the abort reaches the backend (the
// upstream sees its request cancelled).
func TestChatPageInBrowserUntrustedTextAndStop(t *testing.T) {
	b := openTab(t)
	cancelled := make(chan struct{})
	var once sync.Once
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			return // readiness probes
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		piece := func(s string) {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": s}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			rc.Flush()
		}
		piece(`<img src=x onerror="window.__pwned=1"><b>bold</b> `)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range 1500 { // 30 s at most
			select {
			case <-r.Context().Done():
				once.Do(func() { close(cancelled) })
				return
			case <-tick.C:
				piece("and on ")
			}
		}
	}))
	defer up.Close()
	ts := start(t, Options{Upstreams: []upstream.Config{{Name: "hostile", URL: up.URL, Model: "m"}},
		Engines: map[string]engine.Engine{"upstream": upstream.New([]upstream.Config{{Name: "hostile", URL: up.URL, Model: "m"}}, upstream.Options{StartTimeout: 5 * time.Second})}})
	b.do(t, "load /", chromedp.Navigate(ts.URL+"/"))
	b.pickModel(t, "hostile:latest")
	b.do(t, "send, see the markup as text, stop",
		chromedp.SendKeys(chromedp.ID("prompt"), "hi"),
		pressEnter,
		waitFor(`/and on and on/.test(document.querySelector('.msg.assistant .text')?.textContent || '')`),
		chromedp.Click(chromedp.ID("stop")),
		waitFor(`!document.querySelector('.msg.streaming') && /stopped/.test(document.querySelector('.msg.assistant .note')?.textContent || '')`),
	)
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]any](`[document.querySelector('.msg.assistant .text').textContent,
  document.querySelectorAll('#log img, #log b').length, typeof window.__pwned, document.getElementById('stop').hidden, state.history.length]`))
	if err != nil || len(got) != 5 {
		t.Fatal(got, err)
	}
	if text, _ := got[0].(string); !strings.HasPrefix(text, `<img src=x onerror="window.__pwned=1"><b>bold</b> and on`) || got[1] != float64(0) || got[2] != "undefined" {
		t.Errorf("model markup: text %q, %v elements made, __pwned %v", got[0], got[1], got[2])
	}
	if got[3] != true || got[4] != float64(2) {
		t.Errorf("after Stop: stop button hidden %v, %v turns kept (want the partial answer kept: 2)", got[3], got[4])
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Error("Stop did not reach the upstream: its request was not cancelled within 10 s")
	}
	b.checkConsole(t)
}

// TestChatPageScreenshot takes the page after a streamed answer; with
// -args -update-screenshot it writes docs/images/chat-page.png.
func TestChatPageScreenshot(t *testing.T) {
	b := openTab(t)
	ts := pageServer(t, "")
	b.do(t, "load /", chromedp.Navigate(ts.URL+"/"))
	b.pickModel(t, "tinystories:latest")
	b.chat(t, "Once upon a time, there was a little robot", 40)
	b.chat(t, "What did the robot find?", 60)
	img, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil || cfg.Width != 1000 || cfg.Height != 700 {
		t.Fatalf("screenshot: %d×%d %v", cfg.Width, cfg.Height, err)
	}
	if !*updateScreenshot {
		t.Logf("screenshot %d bytes; -args -update-screenshot writes it to docs/images/chat-page.png", len(img))
		return
	}
	if len(img) > 150<<10 {
		t.Fatalf("screenshot is %d bytes, over the 150 KiB kept in the repository", len(img))
	}
	if err := os.WriteFile("../docs/images/chat-page.png", img, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestChatPageInBrowserShowsThinking: a reasoning model's thinking
// (reasoning_content) is shown apart from the answer, as text, and the
// answer bubble's own text stays the answer's.
func TestChatPageInBrowserShowsThinking(t *testing.T) {
	b := openTab(t)
	ts, _ := reasoningServer(t) // qwq: all TinyStories writes under QwQ's template is thinking
	b.do(t, "load /", chromedp.Navigate(ts.URL+"/"))
	b.pickModel(t, "qwq:latest")
	b.do(t, "send, see the thinking",
		chromedp.Evaluate[chromedp.Void](`document.getElementById('max-tokens').value = '16'`),
		chromedp.SendKeys(chromedp.ID("prompt"), "Tell me a story."),
		pressEnter,
		waitFor(`!document.querySelector('.msg.streaming') && (document.querySelector('.msg.assistant .think')?.textContent || '').length > 0`),
	)
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]any](`[document.querySelector('.msg.assistant .think').textContent,
  document.querySelector('.msg.assistant .text').textContent, document.querySelectorAll('#log .think *').length]`))
	if err != nil || len(got) != 3 {
		t.Fatal(got, err)
	}
	// The page samples at the server's default temperature, so the words
	// are not compared; where they go is.
	if think, _ := got[0].(string); strings.TrimSpace(think) == "" || strings.Contains(think, "<think>") || got[1] != "" || got[2] != float64(0) {
		t.Errorf("thinking %q, answer text %q (want empty: all qwq writes is thinking), %v elements made", got[0], got[1], got[2])
	}
	b.checkConsole(t)
}
