package rknnrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// The real helper (helper/edgectl_rknn_helper.py) run by the lane, with
// testdata/pystub's rknnlite (the RKNNLite class, its constants and the
// calls the helper makes, logging each call) in place of the board's.

const numpyHint = "needs python3 with numpy (scripts/install-onnx-check.sh installs Debian's python3-numpy with python3-onnx; on a board rknn-toolkit-lite2 brings it)"

var numpyPython = sync.OnceValue(func() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} { // a pyenv python3 does not see Debian's packages
		if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import numpy").Run() == nil {
			return p
		}
	}
	return ""
})

func TestHelperScriptCompiles(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the helper's syntax is checked where it is")
	}
	// compile() rather than py_compile: it writes no __pycache__.
	cmd := exec.Command(py, "-c", "import sys; compile(sys.stdin.read(), 'edgectl_rknn_helper.py', 'exec')")
	cmd.Stdin = strings.NewReader(string(HelperScript))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the embedded helper does not compile: %v\n%s", err, out)
	}
}

type stubCall struct {
	Op       string   `json:"op"`
	Path     string   `json:"path"`
	CoreMask int      `json:"core_mask"`
	Shapes   [][]int  `json:"shapes"`
	DTypes   []string `json:"dtypes"`
}

// stubLane runs the real helper on a chain whose shard i adds adds[i]
// (a negative add: the shard fails).
func stubLane(t *testing.T, py string, cores []int, adds []float64) (*Engine, string, string, *logBuf) {
	t.Helper()
	dir := t.TempDir()
	err := testmodel.WriteChain(dir, testmodel.ChainSpec{Cores: cores, RKNN: func(i int) []byte {
		if adds[i] < 0 {
			return []byte(`{"fail": true}`)
		}
		return fmt.Appendf(nil, `{"add": %v}`, adds[i])
	}})
	if err != nil {
		t.Fatal(err)
	}
	stub, err := filepath.Abs("testdata/pystub")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	logs := &logBuf{}
	e := New(Options{Python: py, CacheDir: t.TempDir(), Logf: logs.logf, StopTimeout: 5 * time.Second, StartTimeout: time.Minute,
		Env: []string{"PYTHONPATH=" + stub, "RKNNLITE_STUB_LOG=" + log, "PYTHONDONTWRITEBYTECODE=1"}})
	return e, dir, log, logs
}

func stubCalls(t *testing.T, log, op string) []stubCall {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var out []stubCall
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c stubCall
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("stub log %q: %v", line, err)
		}
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

func TestRealHelperRunsChainThroughRKNNLite(t *testing.T) {
	py := numpyPython()
	if py == "" {
		t.Skip(numpyHint)
	}
	cores := []int{0, 1, 2, 0}
	masks := map[int]int{0: 1, 1: 2, 2: 4} // RKNNLite.NPU_CORE_0/1/2
	e, dir, log, _ := stubLane(t, py, cores, []float64{1, 2, 3, 4})
	mm, err := e.Load(context.Background(), dir, engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := mm.(*Model)
	defer m.Close()
	if m.Runtime() != "rknn-toolkit-lite2 0.0-stub" {
		t.Errorf("runtime %q", m.Runtime())
	}
	for i, c := range stubCalls(t, log, "init_runtime") {
		if c.Path != fmt.Sprintf("shard_%02d.rknn", i) || c.CoreMask != masks[cores[i]] {
			t.Errorf("init_runtime %d: %+v, want shard_%02d.rknn with core_mask %d", i, c, i, masks[cores[i]])
		}
	}
	x := input()
	res, err := m.Encode(context.Background(), engine.EncodeRequest{Input: x})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, len(x))
	for i, v := range x {
		want[i] = (v*0.125 + 10) * 2 // 1+2+3+4 added by the shards
	}
	sameFloats(t, res.Output, want)
	calls := stubCalls(t, log, "inference")
	if len(calls) != len(cores) {
		t.Fatalf("%d inference calls, want %d", len(calls), len(cores))
	}
	for i, c := range calls {
		if c.Path != fmt.Sprintf("shard_%02d.rknn", i) || c.CoreMask != masks[cores[i]] ||
			fmt.Sprint(c.Shapes) != "[[1 4 3]]" || fmt.Sprint(c.DTypes) != "[float32]" {
			t.Errorf("inference %d: %+v, want shard_%02d.rknn on mask %d with one float32 [1 4 3]", i, c, i, masks[cores[i]])
		}
	}
	for i, st := range res.Stages {
		if st.Core != cores[i] || st.Duration <= 0 {
			t.Errorf("stage %d: %+v", i, st)
		}
	}
	m.Close()
	if r := stubCalls(t, log, "release"); len(r) != len(cores) {
		t.Errorf("%d release calls on close, want %d", len(r), len(cores))
	}
}

// TestRealHelperShardFailure: RKNNLite.inference returning None (rknn_run
// failed) is an error frame naming the shard; what the runtime printed on
// stdout went to the log, not into the protocol; the helper stays.
func TestRealHelperShardFailure(t *testing.T) {
	py := numpyPython()
	if py == "" {
		t.Skip(numpyHint)
	}
	e, dir, _, logs := stubLane(t, py, []int{0, 1, 2}, []float64{1, 1, -1})
	mm, err := e.Load(context.Background(), dir, engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer mm.Close()
	m := mm.(*Model)
	for range 2 {
		_, err = m.Encode(context.Background(), engine.EncodeRequest{Input: input()})
		var he *HelperError
		if !errors.As(err, &he) || he.Shard == nil || *he.Shard != 2 || !strings.Contains(err.Error(), "shard 2 failed: shard_02.rknn on core 2: inference returned None") {
			t.Fatalf("Encode: %v, want shard 2's failure", err)
		}
		if err := m.Alive(); err != nil {
			t.Fatalf("the helper died of a shard failure: %v", err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "E RKNN: rknn_run failed (stub)") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "E RKNN: rknn_run failed (stub)") {
		t.Errorf("the runtime's stdout line is not in the log:\n%s", logs.String())
	}
}

// TestRealHelperWithoutToolkit: a Python without rknnlite (any machine
// but a prepared board) fails the load saying what to install.
func TestRealHelperWithoutToolkit(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	if err := testmodel.WriteChain(dir, testmodel.ChainSpec{Cores: []int{0}}); err != nil {
		t.Fatal(err)
	}
	e := New(Options{Python: py, CacheDir: t.TempDir(), Logf: func(string, ...any) {}, Env: []string{"PYTHONPATH=" + t.TempDir()}})
	_, err = e.Load(context.Background(), dir, engine.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "cannot import") || !strings.Contains(err.Error(), "rknn-toolkit-lite2") {
		t.Fatalf("Load without rknnlite: %v", err)
	}
}
