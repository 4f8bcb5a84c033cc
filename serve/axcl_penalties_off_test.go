package serve

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
)

// Ollama's options.repeat_last_n 0 turns the penalties off (llama.cpp's
// penalty_last_n 0). On the NPU lane that must reach the runtime as an
// explicit "off": a model whose own post_config enables a repetition
// penalty loads one with it disabled, not its own file again.
func TestNPURepeatLastNZeroTurnsPenaltyOff(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	root := t.TempDir()
	dir := axDir(t, root, "npu", `{}`, 1)
	own := strings.Replace(strings.Replace(modelPost, `"enable_repetition_penalty": false`, `"enable_repetition_penalty": true`, 1),
		`"repetition_penalty": 1.0`, `"repetition_penalty": 1.2`, 1)
	if err := os.WriteFile(filepath.Join(dir, "post_config.json"), []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{
		LaneAxcl: axcl.New(axcl.Options{Command: []string{fakeRuntime(t), "run", "{dir}"}, StopTimeout: time.Second, SMI: []string{}, Logf: logs.logf}),
	}})
	generate := func(options string) map[string]any {
		t.Helper()
		resp, err := http.Post(ts.URL+"/api/generate", "application/json", strings.NewReader(
			`{"model":"npu","stream":false,"prompt":"SAMPLING","options":`+options+`}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Response string }
		json.NewDecoder(resp.Body).Decode(&out)
		var got map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(out.Response, "sampling=")), &got); err != nil {
			t.Fatalf("options %s: status %d, answer %q", options, resp.StatusCode, out.Response)
		}
		return got
	}

	if got := generate(`{}`); got["enable_repetition_penalty"] != true || got["repetition_penalty"] != 1.2 {
		t.Fatalf("model's own post_config (penalty on) not loaded: %v", got)
	}
	got := generate(`{"repeat_last_n":0}`)
	if got["enable_repetition_penalty"] != false {
		t.Errorf("repeat_last_n 0: runtime loaded %v, want the repetition penalty off", got)
	}
	// Only the penalty changes: the model's other settings stay.
	if got["enable_top_k_sampling"] != true || got["top_k"] != 20.0 || got["temperature"] != 0.6 {
		t.Errorf("repeat_last_n 0 changed more than the penalty: %v", got)
	}
	// A repeat_penalty sent with it is off too, as in llama.cpp.
	if got := generate(`{"repeat_last_n":0,"repeat_penalty":1.5}`); got["enable_repetition_penalty"] != false {
		t.Errorf("repeat_last_n 0 with repeat_penalty 1.5: runtime loaded %v, want off", got)
	}
	if got := generate(`{}`); got["enable_repetition_penalty"] != true {
		t.Errorf("no options after repeat_last_n 0: want the model's own penalty back, got %v", got)
	}
}
