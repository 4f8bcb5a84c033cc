package serve

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
)

// A prompt whose byte length already passes what the context could hold
// gets its 400 before it is tokenized: a 7 MB single word (which once took
// ~800 MB and 6 s to tokenize) is refused in well under a second of work,
// and the server allocates less than promptBoundAlloc for the request.
// The bound: the 7 MB body is held a few times over (read, JSON-decoded,
// the prompt string), nothing in proportion to tokenizing it.
const promptBoundAlloc = 96 << 20

func TestHugePromptRefusedBeforeTokenizing(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tiny")
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
	// Load the model first, so the measurement is the request's own work.
	if code, _, b := post(t, ts.URL+"/v1/completions", map[string]any{"model": "tiny", "prompt": "Once", "max_tokens": 1}); code != http.StatusOK {
		t.Fatalf("warm-up: %d %s", code, b)
	}
	word := strings.Repeat("a", 7<<20)
	for _, c := range []struct {
		route string
		body  map[string]any
	}{
		{"/v1/completions", map[string]any{"model": "tiny", "prompt": word, "max_tokens": 1}},
		{"/v1/chat/completions", map[string]any{"model": "tiny", "max_tokens": 1, "messages": []map[string]string{{"role": "user", "content": word}}}},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		code, _, b := post(t, ts.URL+c.route, c.body)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d in %v, %d MiB allocated: %.200s", c.route, code, took.Round(time.Millisecond), alloc>>20, b)
		if c.route == "/v1/chat/completions" && code == http.StatusBadRequest && strings.Contains(string(b), "template") {
			continue // the fixture has no chat template: refused before any tokenizing too
		}
		if code != http.StatusBadRequest || !strings.Contains(string(b), "at least") {
			t.Fatalf("%s: %d %.300s, want 400 saying the prompt is at least N tokens", c.route, code, b)
		}
		if took > 5*time.Second {
			t.Errorf("%s: took %v; the check comes before any tokenizing", c.route, took)
		}
		if alloc > promptBoundAlloc {
			t.Errorf("%s: %d MiB allocated for the request, over the stated %d MiB", c.route, alloc>>20, promptBoundAlloc>>20)
		}
	}
}
