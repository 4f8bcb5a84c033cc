package prep

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/serve"
)

// serveGenerate starts `serve --models modelsDir` (the real server over a
// real listener, with the CPU lane and, when axllm is set, the axcl lane
// driving that vendor CLI) and asks model for a raw greedy completion of
// prompt through the Ollama API.
func serveGenerate(t *testing.T, modelsDir, axllm, model, prompt string, n int) string {
	t.Helper()
	engines := map[string]engine.Engine{serve.LaneCPU: cpu.New()}
	if axllm != "" {
		engines[serve.LaneAxcl] = axcl.New(axcl.Options{Command: []string{axllm, "run", "{dir}"}, StopTimeout: time.Second, SMI: []string{}})
	}
	s, err := serve.New(serve.Options{ModelDirs: []string{modelsDir}, Engines: engines, Logf: t.Logf})
	must(t, err)
	hs := httptest.NewServer(s.Handler())
	defer func() {
		hs.CloseClientConnections()
		hs.Close()
		s.Close()
	}()
	body, _ := json.Marshal(map[string]any{
		"model": model, "prompt": prompt, "raw": true, "stream": false,
		"options": map[string]any{"temperature": 0, "num_predict": n},
	})
	resp, err := http.Post(hs.URL+"/api/generate", "application/json", bytes.NewReader(body))
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("serve answered %d: %s", resp.StatusCode, b)
	}
	var r struct {
		Response string `json:"response"`
		Done     bool   `json:"done"`
		EvalCnt  int    `json:"eval_count"`
	}
	if err := json.Unmarshal(b, &r); err != nil || !r.Done || r.EvalCnt == 0 {
		t.Fatalf("serve answered %s (%v)", b, err)
	}
	return r.Response
}
