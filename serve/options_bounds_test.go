package serve

import (
	"net/http"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
)

// Sampling options from JSON cannot be NaN, but can be huge or negative:
// each is answered (200) or refused (400) in one line, never a 500 or a
// panic, on both APIs.
func TestExtremeSamplingOptions(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tiny")
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
	for _, field := range []string{"temperature", "top_p", "min_p", "top_k", "frequency_penalty", "presence_penalty", "repeat_penalty", "seed", "max_tokens", "n", "top_logprobs"} {
		for _, v := range []any{-1, 0, 1e308, -1e308, 5e-324, 1 << 62} {
			openaiBody := map[string]any{"model": "tiny", "prompt": "Once", "max_tokens": 2, field: v}
			ollamaOpt := field
			switch field {
			case "max_tokens":
				ollamaOpt = "num_predict"
			case "n", "top_logprobs":
				ollamaOpt = ""
			}
			bodies := map[string]map[string]any{"/v1/completions": openaiBody}
			if ollamaOpt != "" {
				bodies["/api/generate"] = map[string]any{"model": "tiny", "prompt": "Once", "stream": false, "options": map[string]any{"num_predict": 2, ollamaOpt: v}}
			}
			for route, body := range bodies {
				code, _, b := post(t, ts.URL+route, body)
				if code != http.StatusOK && code != http.StatusBadRequest {
					t.Errorf("%s %s=%v: %d %.300s", route, field, v, code, b)
				}
				if code == http.StatusBadRequest && (len(b) > 400 || strings.Count(strings.TrimSpace(string(b)), "\n") > 0) {
					t.Errorf("%s %s=%v: want one short line: %.400s", route, field, v, b)
				}
			}
		}
	}
}
