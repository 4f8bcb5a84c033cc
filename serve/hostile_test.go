package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/testmodel"
)

// One server holds every model of the hostile corpus (testdata/hostile) and
// a normal one. Each hostile model fails its own requests within seconds
// with a clear error (or answers, where the case says so), memory stays
// bounded, no response carries a local file or the environment, and the
// normal model answers before, between and after them.
func TestServeHostileCorpus(t *testing.T) {
	t.Setenv("EDGECTL_HOSTILE_SECRET", testmodel.HostileSecret)
	cases, err := testmodel.HostileCases()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dirs := []string{tinyDir(t, t.TempDir(), "tinystories")}
	for _, c := range cases {
		dir, err := c.Materialize(root)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	ts := start(t, Options{ModelDirs: dirs, Watchdog: 20 * time.Second, KeepAlive: KeepAliveNone})

	normal := func(when string) {
		t.Helper()
		code, _, b := post(t, ts.URL+"/v1/completions", `{"model":"tinystories","prompt":"Once upon a time","max_tokens":8,"temperature":0}`)
		var r struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &r) != nil || len(r.Choices) != 1 || strings.TrimSpace(r.Choices[0].Text) == "" {
			t.Fatalf("normal model %s: %d %s", when, code, b)
		}
	}
	normal("before the hostile models")
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			route, body := "/v1/completions", map[string]any{"model": c.Name, "prompt": c.Request.Prompt, "max_tokens": 4, "temperature": 0}
			if c.Request.Prompt == "" {
				route, body = "/v1/chat/completions", map[string]any{"model": c.Name, "messages": c.Request.Messages, "max_tokens": 4, "temperature": 0}
			}
			var (
				code int
				b    []byte
			)
			start := time.Now()
			peak := testmodel.PeakHeap(func() { code, _, b = post(t, ts.URL+route, body) })
			took := time.Since(start)
			msg := strings.ReplaceAll(string(b), c.Name, "CASE")
			t.Logf("%s: %d in %v, peak heap +%d MiB: %.300s", c.What, code, took.Round(time.Millisecond), peak>>20, msg)
			if took > 10*time.Second {
				t.Errorf("took %v; a hostile model must fail within seconds", took)
			}
			if peak > 512<<20 {
				t.Errorf("peak heap grew by %d MiB", peak>>20)
			}
			if testmodel.Leaks(string(b)) {
				t.Fatalf("response carries a local file or the environment:\n%s", b)
			}
			if c.Expect.OK {
				if code != http.StatusOK {
					t.Fatalf("%d, want an answer: %s", code, b)
				}
			} else {
				if code < 400 {
					t.Fatalf("%d, want an error containing %q: %s", code, c.Expect.Error, b)
				}
				var e struct {
					Error struct{ Message string } `json:"error"`
				}
				if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
					t.Fatalf("not an OpenAI error body: %s", b)
				}
				if !strings.Contains(strings.ToLower(msg), strings.ToLower(c.Expect.Error)) {
					t.Errorf("error does not mention %q: %s", c.Expect.Error, msg)
				}
			}
			normal("after " + c.Name)
		})
	}
}
