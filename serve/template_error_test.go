package serve

import (
	"net/http"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
)

// A chat template that refuses the conversation with raise_exception
// (Gemma's: roles must alternate, no system role) is the request's fault:
// both APIs answer 400 with the template's own words, as llama.cpp's
// server and Ollama do, not a 500 that clients retry.
func TestTemplateRaiseIsBadRequest(t *testing.T) {
	root := t.TempDir()
	templatedTinyDir(t, root, "gemma", "google-gemma-2-2b-it.jinja")
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
	twoUsers := []map[string]string{{"role": "user", "content": "a"}, {"role": "user", "content": "b"}}
	for _, c := range []struct {
		path string
		body map[string]any
		want string
	}{
		{"/v1/chat/completions", map[string]any{"model": "gemma", "messages": twoUsers, "max_tokens": 2}, "Conversation roles must alternate"},
		{"/api/chat", map[string]any{"model": "gemma", "messages": twoUsers, "stream": false, "options": map[string]any{"num_predict": 2}}, "Conversation roles must alternate"},
		{"/v1/chat/completions", map[string]any{"model": "gemma", "max_tokens": 2, "messages": []map[string]string{
			{"role": "system", "content": "s"}, {"role": "user", "content": "a"}}}, "System role not supported"},
	} {
		code, _, body := post(t, ts.URL+c.path, c.body)
		if code != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.path, code, body, c.want)
		}
	}
}
