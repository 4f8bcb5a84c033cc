package serve

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// errorMessage is the message of an OpenAI or Ollama error body.
func errorMessage(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		t.Fatalf("not an error body: %.300s", body)
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return s // Ollama: {"error": "…"}
	}
	var o struct{ Message string }
	json.Unmarshal(e.Error, &o)
	return o.Message
}

func checkShort(t *testing.T, what, msg string) {
	t.Helper()
	if msg == "" || len(msg) > 300 || strings.ContainsAny(msg, "\n\r") {
		t.Errorf("%s: want one line of at most 300 bytes, got %d bytes: %.400q", what, len(msg), msg)
	}
}

// Values from outside come back clipped: a 1 MB model name, and a chat
// template's raise_exception with 5 MB over 200 lines, each as one line of
// at most 300 bytes on both APIs.
func TestErrorMessagesAreBounded(t *testing.T) {
	root := t.TempDir()
	dir := templatedTinyDir(t, root, "raiser", "google-gemma-2-2b-it.jinja")
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	b, _ := os.ReadFile(cfgPath)
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"] = "{{ raise_exception(messages[0].content) }}"
	b, _ = json.Marshal(cfg)
	os.WriteFile(cfgPath, b, 0o644)
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})

	huge := strings.Repeat("m", 1<<20)
	for _, route := range []string{"/v1/chat/completions", "/api/chat"} {
		code, _, body := post(t, ts.URL+route, map[string]any{"model": huge, "stream": false,
			"messages": []map[string]string{{"role": "user", "content": "hi"}}})
		if code != http.StatusNotFound {
			t.Fatalf("%s with a 1 MB model name: %d %.300s", route, code, body)
		}
		msg := errorMessage(t, body)
		checkShort(t, route+" 1 MB model name", msg)
		if !strings.Contains(msg, "(1048576 bytes)") {
			t.Errorf("%s: the name's length is not given: %s", route, msg)
		}
	}
	exception := strings.Repeat(strings.Repeat("x", 25000)+"\n", 200) // 5 MB, 200 lines
	for _, route := range []string{"/v1/chat/completions", "/api/chat"} {
		code, _, body := post(t, ts.URL+route, map[string]any{"model": "raiser", "stream": false, "max_tokens": 2,
			"messages": []map[string]string{{"role": "user", "content": exception}}})
		if code != http.StatusBadRequest {
			t.Fatalf("%s: %d %.300s, want 400", route, code, body)
		}
		checkShort(t, route+" template exception", errorMessage(t, body))
	}
}

// A model that fails to load names its file to the client by the model's
// name, never the server's path (the log keeps the path).
func TestErrorsHideServerPaths(t *testing.T) {
	cases, err := testmodel.HostileCases()
	if err != nil {
		t.Skip("hostile corpus:", err)
	}
	root := t.TempDir()
	var failing []testmodel.HostileCase
	var dirs []string
	for _, c := range cases {
		if c.Expect.OK || c.Request.Prompt == "" {
			continue
		}
		dir, err := c.Materialize(root)
		if err != nil {
			t.Fatal(err)
		}
		failing, dirs = append(failing, c), append(dirs, dir)
	}
	if len(failing) == 0 {
		t.Skip("no failing prompt case in the hostile corpus")
	}
	var logged strings.Builder
	ts := start(t, Options{ModelDirs: dirs, KeepAlive: KeepAliveNone, Engines: map[string]engine.Engine{LaneCPU: cpu.New()},
		Logf: func(f string, a ...any) { logged.WriteString(f + "\n") }})
	hidden := 0
	for _, c := range failing {
		code, _, body := post(t, ts.URL+"/v1/completions", map[string]any{"model": c.Name, "prompt": c.Request.Prompt, "max_tokens": 2})
		msg := errorMessage(t, body)
		if code < 400 {
			continue
		}
		t.Logf("%s: %d %.200s", c.Name, code, msg)
		if strings.Contains(string(body), root) {
			t.Errorf("%s: %d body names the server's path %s: %s", c.Name, code, root, body)
		}
		if strings.Contains(msg, c.Name) {
			hidden++
		}
	}
	t.Logf("%d of %d failing models named by their model name", hidden, len(failing))
	if n := strings.Count(logged.String(), "paths hidden"); n == 0 {
		t.Error("no error had a path to hide: the corpus no longer exercises this test")
	} else {
		t.Logf("%d errors had server paths, kept in the log only", n)
	}
}
