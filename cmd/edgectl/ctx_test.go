package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// run --ctx caps the context the engine reserves: the load line reports it
// and a prompt longer than it is refused.
func TestRunCtxFlag(t *testing.T) {
	code, _, errOut := runCmd(t, "", "run", runFixture, "Once upon a time", "-n", "4", "--temperature", "0", "--ctx", "64")
	if code != 0 || !strings.Contains(errOut, "context 64 tokens") {
		t.Errorf("--ctx 64: exit %d: %s", code, errOut)
	}
	code, _, errOut = runCmd(t, "", "run", runFixture, "--ctx", "64")
	if code != 0 || !strings.Contains(errOut, "context 64 tokens") {
		t.Errorf("--ctx 64, interactive: exit %d: %s", code, errOut)
	}
	long := strings.Repeat("Once upon a time there was a dog. ", 10)
	code, _, errOut = runCmd(t, "", "run", runFixture, long, "--ctx", "16")
	if code != exitError || !strings.Contains(errOut, "context window is 16") {
		t.Errorf("prompt past --ctx 16: exit %d: %s", code, errOut)
	}
	code, _, errOut = runCmd(t, "", "run", runFixture, "hi", "--ctx", "-1")
	if code != exitUsage || !strings.Contains(errOut, "--ctx") {
		t.Errorf("--ctx -1: exit %d: %s", code, errOut)
	}
}

// serve --ctx sets the context of cpu-lane models, as /api/show reports
// once the model is loaded.
func TestServeCtxFlag(t *testing.T) {
	ev := serveJSON(t, "--models", runFixture, "--addr", "127.0.0.1:0", "--ctx", "100")
	post := func(path, body string, into any) {
		t.Helper()
		resp, err := http.Post(ev.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if into != nil {
			if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
				t.Fatal(err)
			}
		}
	}
	post("/api/generate", `{"model":"tinystories-656k","prompt":"Once upon a time","stream":false,"options":{"num_predict":2}}`, nil)
	var show struct {
		ModelInfo map[string]any `json:"model_info"`
	}
	post("/api/show", `{"model":"tinystories-656k"}`, &show)
	if got := show.ModelInfo["llama.context_length"]; got != 100.0 {
		t.Errorf("context_length %v, want 100 (model_info %v)", got, show.ModelInfo)
	}
	if code := ev.Stop(); code != 0 {
		t.Errorf("exit %d: %s", code, ev.ErrOut)
	}
}
