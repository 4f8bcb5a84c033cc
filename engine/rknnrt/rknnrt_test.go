package rknnrt

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/testbin"
	"github.com/edgectl/edgectl/internal/testmodel"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// fakeLane is a chain on disk and the lane running it with the fake
// helper, whose log and control file the test reads and writes.
type fakeLane struct {
	dir, log, control string
	eng               *Engine
	logs              *logBuf
}

func newFakeLane(t *testing.T, cores []int, opts Options) *fakeLane {
	t.Helper()
	dir, state := t.TempDir(), t.TempDir()
	if err := testmodel.WriteChain(dir, testmodel.ChainSpec{Cores: cores}); err != nil {
		t.Fatal(err)
	}
	f := &fakeLane{dir: dir, log: filepath.Join(state, "log.jsonl"), control: filepath.Join(state, "control"), logs: &logBuf{}}
	opts.Command = []string{testbin.Build(t, testbin.FakeRKNNHelper, "fakerknnhelper")}
	opts.Env = append(opts.Env, "FAKE_RKNN_LOG="+f.log, "FAKE_RKNN_CONTROL="+f.control)
	opts.Logf = f.logs.logf
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 2 * time.Second
	}
	f.eng = New(opts)
	return f
}

func (f *fakeLane) load(t *testing.T) *Model {
	t.Helper()
	m, err := f.eng.Load(context.Background(), f.dir, engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m.(*Model)
}

// order writes the fake's one-shot order for its next run.
func (f *fakeLane) order(t *testing.T, s string) {
	t.Helper()
	if err := os.WriteFile(f.control, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

type event struct {
	PID   int    `json:"pid"`
	Event string `json:"event"`
	ID    uint64 `json:"id"`
	Index int    `json:"index"`
	Core  int    `json:"core"`
}

// events are the fake's log lines of kind (all kinds when "").
func (f *fakeLane) events(t *testing.T, kind string) []event {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []event
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("fake's log line %q: %v", sc.Text(), err)
		}
		if kind == "" || e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// input is 12 values for the default [1, 4, 3] shape.
func input() []float32 {
	x := make([]float32, 12)
	for i := range x {
		x[i] = float32(i) - 5.5
	}
	return x
}

// want is what a chain of n fake shards returns: the host scales by
// 0.125, each shard adds 1, the host scales by 2.
func want(x []float32, n int) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = (v*0.125 + float32(n)) * 2
	}
	return y
}

func sameFloats(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("value %d = %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
}

func TestShardsRunInOrderOnTheirCores(t *testing.T) {
	cores := []int{0, 1, 2, 0, 1}
	f := newFakeLane(t, cores, Options{})
	found, ok := f.eng.Probe(f.dir)
	if !ok || found.Format != "rknn" || found.Size <= 0 {
		t.Fatalf("Probe = %+v, %v; want an rknn chain with its .rknn bytes as size", found, ok)
	}
	m := f.load(t)
	for i, e := range f.events(t, "load") {
		if e.Index != i || e.Core != cores[i] {
			t.Errorf("load %d: shard %d on core %d, want shard %d on core %d", i, e.Index, e.Core, i, cores[i])
		}
	}
	for round := 0; round < 2; round++ {
		res, err := m.Encode(context.Background(), engine.EncodeRequest{Input: input(), Shape: []int{1, 4, 3}})
		if err != nil {
			t.Fatal(err)
		}
		sameFloats(t, res.Output, want(input(), len(cores)))
		if fmt.Sprint(res.Shape) != "[1 4 3]" {
			t.Errorf("output shape %v", res.Shape)
		}
		if len(res.Stages) != len(cores) {
			t.Fatalf("%d stages, want %d", len(res.Stages), len(cores))
		}
		for i, st := range res.Stages {
			if st.Name != fmt.Sprintf("shard_%02d.rknn", i) || st.Core != cores[i] || st.Duration != 500*time.Microsecond {
				t.Errorf("stage %d = %+v, want shard_%02d.rknn on core %d, 0.5 ms", i, st, i, cores[i])
			}
		}
	}
	runs := f.events(t, "run")
	if len(runs) != 2*len(cores) {
		t.Fatalf("the helper ran %d shards, want %d", len(runs), 2*len(cores))
	}
	for i, e := range runs {
		if e.Index != i%len(cores) || e.Core != cores[i%len(cores)] || e.ID != uint64(i/len(cores)+1) {
			t.Errorf("run step %d: request %d shard %d on core %d; want request %d shard %d on core %d",
				i, e.ID, e.Index, e.Core, i/len(cores)+1, i%len(cores), cores[i%len(cores)])
		}
	}
	// Close: the quit frame, and the helper is gone.
	pid := m.PID()
	m.Close()
	if q := f.events(t, "quit"); len(q) != 1 || q[0].PID != pid {
		t.Errorf("quit events %+v, want one from %d", q, pid)
	}
	if m.Alive() == nil {
		t.Error("Alive after Close")
	}
}

func TestBadInputRefusedBeforeTheHelper(t *testing.T) {
	f := newFakeLane(t, []int{0, 1}, Options{})
	m := f.load(t)
	nan := input()
	nan[7] = float32(nanValue())
	for _, c := range []struct {
		req  engine.EncodeRequest
		want string
	}{
		{engine.EncodeRequest{Input: input(), Shape: []int{1, 3, 4}}, "input shape [1 3 4]: " + m.info.Name + " takes patch_embeds [1 4 3]"},
		{engine.EncodeRequest{Input: input()[:11]}, "input holds 11 values, shape [1 4 3] needs 12"},
		{engine.EncodeRequest{Input: nan}, "input[7] is NaN"},
	} {
		_, err := m.Encode(context.Background(), c.req)
		if !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Encode(%v): %v, want an invalid request saying %q", c.req.Shape, err, c.want)
		}
	}
	if runs := f.events(t, "run"); len(runs) != 0 {
		t.Errorf("the helper ran %v for refused requests", runs)
	}
	if err := m.Alive(); err != nil {
		t.Errorf("refused requests killed the helper: %v", err)
	}
}

func nanValue() float64 { var z float64; return z / z }

// TestShardErrorKeepsHelper: an error frame fails the request, names the
// shard, stops the chain there, and the same helper answers the next one.
func TestShardErrorKeepsHelper(t *testing.T) {
	cores := []int{0, 1, 2, 0}
	f := newFakeLane(t, cores, Options{})
	m := f.load(t)
	pid := m.PID()
	f.order(t, "fail 2")
	_, err := m.Encode(context.Background(), engine.EncodeRequest{Input: input()})
	var he *HelperError
	if !errors.As(err, &he) || he.Shard == nil || *he.Shard != 2 || !strings.Contains(err.Error(), "shard 2 failed: inference returned None on core 2") {
		t.Fatalf("Encode: %v, want the helper's error for shard 2", err)
	}
	if runs := f.events(t, "run"); len(runs) != 3 {
		t.Errorf("the chain went on past the failed shard: %+v", runs)
	}
	if err := m.Alive(); err != nil {
		t.Fatalf("a shard error killed the helper: %v", err)
	}
	res, err := m.Encode(context.Background(), engine.EncodeRequest{Input: input()})
	if err != nil {
		t.Fatal(err)
	}
	sameFloats(t, res.Output, want(input(), len(cores)))
	if m.PID() != pid {
		t.Error("the helper was restarted after a shard error")
	}
}

// TestHangTimesOutAndKills: a helper that stops answering is killed at
// RunTimeout; the model reports itself dead (serve loads it again), and
// a new load answers.
func TestHangTimesOutAndKills(t *testing.T) {
	f := newFakeLane(t, []int{0, 1, 2}, Options{RunTimeout: 300 * time.Millisecond})
	m := f.load(t)
	pid := m.PID()
	f.order(t, "hang 1")
	start := time.Now()
	_, err := m.Encode(context.Background(), engine.EncodeRequest{Input: input()})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Encode on a hung helper: %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %v", d)
	}
	if m.Alive() == nil {
		t.Fatal("Alive after a timeout: serve would keep the hung helper")
	}
	if !gone(pid) {
		t.Fatalf("hung helper %d still running", pid)
	}
	if _, err := m.Encode(context.Background(), engine.EncodeRequest{Input: input()}); err == nil {
		t.Fatal("a killed helper answered")
	}
	m2 := f.load(t)
	res, err := m2.Encode(context.Background(), engine.EncodeRequest{Input: input()})
	if err != nil || m2.PID() == pid {
		t.Fatalf("reload after a timeout: %v (pid %d, old %d)", err, m2.PID(), pid)
	}
	sameFloats(t, res.Output, want(input(), 3))
}

// TestDeadlineKills: the caller's deadline (serve's watchdog) ends a
// request as RunTimeout does.
func TestDeadlineKills(t *testing.T) {
	f := newFakeLane(t, []int{0, 1}, Options{})
	m := f.load(t)
	f.order(t, "hang 0")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := m.Encode(ctx, engine.EncodeRequest{Input: input()})
	if !errors.Is(err, ErrTimeout) || m.Alive() == nil || !gone(m.PID()) {
		t.Fatalf("Encode past the deadline: %v; Alive %v", err, m.Alive())
	}
}

// TestClientGoneKeepsHelper: a cancelled request fails with the
// cancellation but does not kill the helper (the NPU run cannot be
// interrupted): its answer is read and dropped, holding the lane until
// then, and the next request gets its own.
func TestClientGoneKeepsHelper(t *testing.T) {
	f := newFakeLane(t, []int{0, 1}, Options{})
	m := f.load(t)
	pid := m.PID()
	f.order(t, "sleep 0 300")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := m.Encode(ctx, engine.EncodeRequest{Input: input()}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Encode: %v", err)
	}
	if err := m.Alive(); err != nil || m.PID() != pid {
		t.Fatalf("a client going away killed the helper: %v", err)
	}
	res, err := m.Encode(context.Background(), engine.EncodeRequest{Input: input()})
	if err != nil {
		t.Fatal(err)
	}
	sameFloats(t, res.Output, want(input(), 2))
}

// TestCrashBetweenRequests: a helper that dies while idle makes Alive
// fail (serve then loads again) and a request on it fails clearly.
func TestCrashBetweenRequests(t *testing.T) {
	f := newFakeLane(t, []int{0, 1}, Options{})
	m := f.load(t)
	if err := syscall.Kill(m.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for m.Alive() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := m.Alive(); !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "fake rknn helper starting") {
		t.Fatalf("Alive after SIGKILL: %v, want ErrExited with the helper's last output", err)
	}
	if _, err := m.Encode(context.Background(), engine.EncodeRequest{Input: input()}); !errors.Is(err, ErrExited) {
		t.Fatalf("Encode on a dead helper: %v", err)
	}
}

// TestCrashDuringRequest: the helper's exit fails the request with its
// last words, and the model is dead.
func TestCrashDuringRequest(t *testing.T) {
	f := newFakeLane(t, []int{0, 1, 2}, Options{})
	m := f.load(t)
	f.order(t, "crash 1")
	_, err := m.Encode(context.Background(), engine.EncodeRequest{Input: input()})
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "Segmentation fault (fake)") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Encode when the helper crashes: %v", err)
	}
	if m.Alive() == nil {
		t.Fatal("Alive after the helper crashed")
	}
}

// TestGarbledAnswerKills: an answer for another frame means the helper
// and edgectl disagree: it is restarted rather than trusted.
func TestGarbledAnswerKills(t *testing.T) {
	f := newFakeLane(t, []int{0}, Options{})
	m := f.load(t)
	f.order(t, "garble")
	_, err := m.Encode(context.Background(), engine.EncodeRequest{Input: input()})
	if err == nil || !strings.Contains(err.Error(), "answer to frame 8 arrived for frame 1") || m.Alive() == nil {
		t.Fatalf("Encode with a garbled answer: %v; Alive %v", err, m.Alive())
	}
}

func TestLoadFailureSaysWhy(t *testing.T) {
	f := newFakeLane(t, []int{0, 1}, Options{Env: []string{"FAKE_RKNN_LOAD_FAIL=1"}})
	_, err := f.eng.Load(context.Background(), f.dir, engine.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "load_rknn returned -1 (fake)") {
		t.Fatalf("Load: %v, want the helper's error", err)
	}
}

// TestHelperExitingAtOnceIsHeard: a helper that explains itself in an
// error frame and exits without reading (rknnlite missing) is heard, not
// reported as a broken pipe.
func TestHelperExitingAtOnceIsHeard(t *testing.T) {
	f := newFakeLane(t, []int{0}, Options{})
	f.eng.opts.Command = []string{"/bin/sh", "-c", `printf '{"op":"error","message":"cannot import rknnlite (test)"}\n'; exec 0<&-; exit 2`}
	for range 3 { // the exit races the load frame's write
		_, err := f.eng.Load(context.Background(), f.dir, engine.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), "cannot import rknnlite (test)") {
			t.Fatalf("Load: %v, want the helper's own error", err)
		}
	}
}

func TestChangedShardRefused(t *testing.T) {
	f := newFakeLane(t, []int{0, 1}, Options{})
	p := filepath.Join(f.dir, "shard_01.rknn")
	if err := os.WriteFile(p, []byte("another build\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.eng.Load(context.Background(), f.dir, engine.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "shards[1]") || !strings.Contains(err.Error(), "changed since `edgectl rknn build`") {
		t.Fatalf("Load with a changed .rknn: %v", err)
	}
	if len(f.events(t, "")) != 0 {
		t.Error("the helper was started for a chain that fails its check")
	}
	os.Remove(p)
	if _, ok := f.eng.Probe(f.dir); ok {
		t.Error("Probe accepts a chain with a .rknn file missing")
	}
	if _, ok := f.eng.Probe(t.TempDir()); ok {
		t.Error("Probe accepts an empty directory")
	}
}

// gone waits briefly for pid to be reaped.
func gone(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
	}
	return false
}

// BenchmarkEncodeSigLIPShape is the lane's own cost per request at the
// real encoder's size (1 × 1024 × 768 float32) with the fake helper: host
// scaling and two 3 MiB pipe transfers (1 shard), plus what passing the
// tensor through 24 trivial fake shards adds (docs/rknn.md quotes it).
func BenchmarkEncodeSigLIPShape(b *testing.B) {
	for _, n := range []int{1, 24} {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			cores := make([]int, n)
			for i := range cores {
				cores[i] = i % 3
			}
			if err := testmodel.WriteChain(dir, testmodel.ChainSpec{Cores: cores, Shape: []int{1, 1024, 768}}); err != nil {
				b.Fatal(err)
			}
			e := New(Options{Command: []string{testbin.Build(b, testbin.FakeRKNNHelper, "fakerknnhelper")}, Logf: func(string, ...any) {}})
			m, err := e.Load(context.Background(), dir, engine.LoadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			x := make([]float32, 1024*768)
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				if _, err := m.(*Model).Encode(context.Background(), engine.EncodeRequest{Input: x}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
