package serve

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/rknnrt"
	"github.com/edgectl/edgectl/internal/testbin"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// rknnServer serves a built shard chain "vit" (cores 0, 1, 2, 0; input
// and output [1, 4, 3], input_scale 0.125, output_scale 2) on the rknn
// lane with the fake helper, beside the tinystories model on the cpu
// lane. The returned control file takes the fake's one-shot orders.
func rknnServer(t *testing.T, runTimeout time.Duration) (*testServer, string, string) {
	t.Helper()
	root, state := t.TempDir(), t.TempDir()
	tinyDir(t, root, "tinystories")
	dir := filepath.Join(root, "vit")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testmodel.WriteChain(dir, testmodel.ChainSpec{Cores: []int{0, 1, 2, 0}}); err != nil {
		t.Fatal(err)
	}
	control, log := filepath.Join(state, "control"), filepath.Join(state, "log.jsonl")
	lane := rknnrt.New(rknnrt.Options{Command: []string{testbin.Build(t, testbin.FakeRKNNHelper, "fakerknnhelper")},
		Env: []string{"FAKE_RKNN_CONTROL=" + control, "FAKE_RKNN_LOG=" + log}, RunTimeout: runTimeout, StopTimeout: 2 * time.Second, Logf: t.Logf})
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New(), LaneRKNN: lane}})
	return ts, control, log
}

type encodeAnswer struct {
	Model          string          `json:"model"`
	Shape          []int           `json:"shape"`
	EncodingFormat string          `json:"encoding_format"`
	Output         json.RawMessage `json:"output"`
	Shards         []struct {
		File string  `json:"file"`
		Core int     `json:"core"`
		MS   float64 `json:"ms"`
	} `json:"shards"`
	Metrics struct {
		Lane     string         `json:"lane"`
		LoadMS   float64        `json:"load_ms"`
		Hardware map[string]any `json:"hardware"`
	} `json:"metrics"`
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

func encode(t *testing.T, ts *testServer, body any) (int, encodeAnswer) {
	t.Helper()
	code, _, b := post(t, ts.URL+"/v1/rknn/encode", body)
	var a encodeAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("answer %s: %v", b, err)
	}
	return code, a
}

// twelve is the [1, 4, 3] input; chained is what the fake chain returns
// for it: ×0.125 on the host, +1 in each of 4 shards, ×2 on the host.
func twelve() []float32 {
	x := make([]float32, 12)
	for i := range x {
		x[i] = float32(i)*0.5 - 3
	}
	return x
}

func chained(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = (v*0.125 + 4) * 2
	}
	return y
}

func TestRKNNEncodeRunsChain(t *testing.T) {
	ts, _, _ := rknnServer(t, 0)
	code, a := encode(t, ts, map[string]any{"model": "vit", "input": twelve(), "shape": []int{1, 4, 3}})
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, a.Error.Message)
	}
	var out []float32
	if err := json.Unmarshal(a.Output, &out); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out) != fmt.Sprint(chained(twelve())) || fmt.Sprint(a.Shape) != "[1 4 3]" || a.EncodingFormat != "float" {
		t.Errorf("output %v shape %v (%s), want %v", out, a.Shape, a.EncodingFormat, chained(twelve()))
	}
	cores := []int{0, 1, 2, 0}
	if len(a.Shards) != 4 {
		t.Fatalf("shards %+v", a.Shards)
	}
	for i, s := range a.Shards {
		if s.File != fmt.Sprintf("shard_%02d.rknn", i) || s.Core != cores[i] || s.MS != 0.5 {
			t.Errorf("shard %d: %+v", i, s)
		}
	}
	if a.Metrics.Lane != LaneRKNN || a.Metrics.LoadMS <= 0 || a.Metrics.Hardware["shards"] != float64(4) || a.Metrics.Hardware["npu_ms"] != float64(2) {
		t.Errorf("metrics %+v", a.Metrics)
	}

	// base64 both ways
	b := make([]byte, 0, 48)
	for _, v := range twelve() {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	code, a = encode(t, ts, map[string]any{"model": "vit", "input": base64.StdEncoding.EncodeToString(b), "encoding_format": "base64"})
	var s string
	if code != http.StatusOK || json.Unmarshal(a.Output, &s) != nil || a.EncodingFormat != "base64" {
		t.Fatalf("base64: %d %s %s", code, a.Output, a.Error.Message)
	}
	raw, _ := base64.StdEncoding.DecodeString(s)
	for i, want := range chained(twelve()) {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != want {
			t.Fatalf("base64 output %d = %v, want %v", i, got, want)
		}
	}

	// listed with its lane: /v1/models, /api/tags, /health
	_, body := get(t, ts.URL+"/v1/models/vit:latest")
	if !strings.Contains(string(body), `"id":"vit:latest"`) || !strings.Contains(string(body), `"owned_by":"rknn"`) || strings.Contains(string(body), `"fields"`) {
		t.Errorf("/v1/models/vit:latest: %s (want the rknn lane, and no generation fields)", body)
	}
	_, body = get(t, ts.URL+"/api/tags")
	if !strings.Contains(string(body), `"format":"rknn"`) {
		t.Errorf("/api/tags: %s", body)
	}
	_, body = get(t, ts.URL+"/health")
	var h struct {
		Lanes []struct {
			Name, Backend string
			Loaded        int
		}
		Models []struct{ Name, Lane string }
	}
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(h.Models) != "[{vit:latest rknn}]" || !strings.Contains(fmt.Sprint(h.Lanes), "{rknn rknn 1}") {
		t.Errorf("/health lanes %v models %v", h.Lanes, h.Models)
	}
}

func TestRKNNEncodeRefusals(t *testing.T) {
	ts, _, _ := rknnServer(t, 0)
	for _, c := range []struct {
		body any
		code int
		want string
	}{
		{map[string]any{"input": twelve()}, 400, "model is required"},
		{map[string]any{"model": "vit"}, 400, "input is required"},
		{map[string]any{"model": "vit", "input": "AAAA", "encoding_format": "hex"}, 400, `encoding_format "hex": want float or base64`},
		{map[string]any{"model": "vit", "input": "AAA=", "encoding_format": "base64"}, 400, "2 bytes, not a whole number of float32 values"},
		{map[string]any{"model": "vit", "input": []any{1, "x"}}, 400, "want a flat array of numbers"},
		{map[string]any{"model": "nope", "input": twelve()}, 404, "nope"},
		{map[string]any{"model": "tinystories", "input": twelve()}, 400, "runs on the cpu lane, which does not encode tensors"},
		{map[string]any{"model": "vit", "input": twelve(), "shape": []int{12}}, 400, "input shape [12]: vit takes patch_embeds [1 4 3]"},
		{map[string]any{"model": "vit", "input": twelve()[:5]}, 400, "input holds 5 values, shape [1 4 3] needs 12"},
	} {
		code, a := encode(t, ts, c.body)
		if code != c.code || !strings.Contains(a.Error.Message, c.want) {
			t.Errorf("%v: %d %q, want %d saying %q", c.body, code, a.Error.Message, c.code, c.want)
		}
	}
	// chat and generate: the encoder only encodes
	code, _, body := post(t, ts.URL+"/v1/chat/completions", map[string]any{"model": "vit", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if code != 400 || !strings.Contains(string(body), "only encodes: send it to POST /v1/rknn/encode") {
		t.Errorf("chat on the encoder: %d %s", code, body)
	}
	code, _, body = post(t, ts.URL+"/api/generate", map[string]any{"model": "vit", "prompt": "hi", "stream": false})
	if code != 400 || !strings.Contains(string(body), "only encodes") {
		t.Errorf("generate on the encoder: %d %s", code, body)
	}
}

// TestRKNNEncodeRecovers: a shard error is a 500 naming the shard and the
// helper serves on; a hung helper is a 504, killed, and the next request
// gets a new one; so does a helper that crashed between requests.
func TestRKNNEncodeRecovers(t *testing.T) {
	ts, control, _ := rknnServer(t, 400*time.Millisecond)
	req := map[string]any{"model": "vit", "input": twelve()}
	ok := func(what string) {
		t.Helper()
		code, a := encode(t, ts, req)
		var out []float32
		json.Unmarshal(a.Output, &out)
		if code != 200 || fmt.Sprint(out) != fmt.Sprint(chained(twelve())) {
			t.Fatalf("%s: %d %q %v", what, code, a.Error.Message, out)
		}
	}
	order := func(s string) {
		if err := os.WriteFile(control, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loads := func() string { return metric(t, ts, "edgectl_model_loads_total") }
	ok("first request")
	if n := loads(); n != "1" {
		t.Fatalf("%v loads after the first request", n)
	}

	order("fail 1")
	code, a := encode(t, ts, req)
	if code != 500 || !strings.Contains(a.Error.Message, "shard 1 failed: inference returned None on core 1") {
		t.Errorf("shard error: %d %q", code, a.Error.Message)
	}
	ok("after a shard error")
	if n := loads(); n != "1" {
		t.Errorf("a shard error reloaded the chain (%v loads)", n)
	}

	order("hang 2")
	code, a = encode(t, ts, req)
	if code != http.StatusGatewayTimeout || !strings.Contains(a.Error.Message, "timed out") {
		t.Errorf("hung helper: %d %q", code, a.Error.Message)
	}
	ok("after a timeout")
	eventually(t, "a second load after the timeout", func() bool { return loads() == "2" })

	pid := helperPID(t, ts)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the helper's death seen", func() bool { return helperAlive(ts) != nil })
	ok("after a crash between requests")
	if n := loads(); n != "3" {
		t.Errorf("%v loads after the crash, want 3", n)
	}
}

// helperPID is the loaded chain's helper.
func helperPID(t *testing.T, ts *testServer) int {
	t.Helper()
	for _, l := range ts.sched.Loaded() {
		if l.Entry.Name == "vit:latest" {
			ts.sched.mu.Lock()
			m := ts.sched.runners["vit:latest"].model.(*rknnrt.Model)
			ts.sched.mu.Unlock()
			return m.PID()
		}
	}
	t.Fatal("vit is not loaded")
	return 0
}

func helperAlive(ts *testServer) error {
	ts.sched.mu.Lock()
	defer ts.sched.mu.Unlock()
	r := ts.sched.runners["vit:latest"]
	if r == nil || r.model == nil {
		return fmt.Errorf("not loaded")
	}
	return r.model.(*rknnrt.Model).Alive()
}
