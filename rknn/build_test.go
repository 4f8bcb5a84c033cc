package rknn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/rknnchain"
	"github.com/edgectl/edgectl/internal/container"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/internal/testbin"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// fakeCall is a line of the fake toolkit's log (internal/testbin/testdata/fakerknn).
type fakeCall struct {
	Prog   string         `json:"prog"`
	Argv   []string       `json:"argv"`
	Shard  int            `json:"shard"`
	Config map[string]any `json:"config"`
	Load   map[string]any `json:"load_onnx"`
}

// useFakeToolkit puts the fake runtime (docker, podman and, with native,
// python3) first on PATH and returns the file it logs its calls to.
func useFakeToolkit(t *testing.T, native bool) string {
	t.Helper()
	bins := map[string]string{"docker": testbin.FakeRKNN, "podman": testbin.FakeRKNN}
	if native {
		bins = map[string]string{"python3": testbin.FakeRKNN}
	}
	t.Setenv("PATH", testbin.Dir(t, bins)+string(os.PathListSeparator)+os.Getenv("PATH"))
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	t.Setenv("FAKE_RKNN_LOG", log)
	t.Setenv("FAKE_RKNN_STATE", t.TempDir())
	for _, k := range []string{"FAKE_RKNN_IMAGES", "FAKE_RKNN_VERSION", "FAKE_RKNN_MISSING", "FAKE_RKNN_FAIL"} {
		t.Setenv(k, "")
	}
	return log
}

func callsOf(calls []fakeCall, prog string) []fakeCall {
	var out []fakeCall
	for _, c := range calls {
		if c.Prog == prog {
			out = append(out, c)
		}
	}
	return out
}

// makeChain shards a small generated encoder into 4 shards on 2 cores.
func makeChain(t *testing.T, barrier string) string {
	t.Helper()
	dir := t.TempDir()
	model := writeModel(t, dir, testmodel.ViTSpec{Tokens: 64, Hidden: 48, Heads: 3, Layers: 2, Seed: 3})
	out := filepath.Join(dir, "chain")
	if _, err := Shard(context.Background(), ShardOptions{Model: model, OutDir: out, SRAMKB: 4, Cores: 2, Barrier: barrier, Log: testLog{t}}); err != nil {
		t.Fatal(err)
	}
	return out
}

// events records what a build reported.
type events struct {
	mu sync.Mutex
	ev []progress.Event
}

func (e *events) on(ev progress.Event) { e.mu.Lock(); e.ev = append(e.ev, ev); e.mu.Unlock() }

func (e *events) count(kind, step string) int {
	n := 0
	for _, ev := range e.ev {
		if ev.Event == kind && (step == "" || ev.Step == step) {
			n++
		}
	}
	return n
}

// snapshot is the chain directory's file names and the manifest's bytes.
func snapshot(t *testing.T, dir string) ([]string, string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	b, err := os.ReadFile(filepath.Join(dir, rknnchain.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	return names, string(b)
}

// TestBuildInContainer: one container per shard, no network, the chain
// read-only, the user mapped; the script's rknn.config gets the manifest's
// build config and load_onnx each shard's tensor names and sizes; the
// .rknn files land beside the manifest, which records them.
func TestBuildInContainer(t *testing.T) {
	log := useFakeToolkit(t, false)
	chain := makeChain(t, BarrierRules)
	var ev events
	res, err := Build(context.Background(), BuildOptions{Dir: chain, Image: "rknn-toolkit2:2.3.2", OnEvent: ev.on})
	if err != nil {
		t.Fatal(err)
	}
	m, err := rknnchain.Read(chain)
	if err != nil {
		t.Fatal(err)
	}
	if res.ToolkitVersion != "2.3.2" || res.Runtime != "docker" || len(res.Shards) != len(m.Shards) || len(m.Shards) != 4 {
		t.Fatalf("result %+v", res)
	}
	calls := callsOf(testbin.ReadJSONL[fakeCall](t, log), "docker")
	if len(calls) != 1+len(m.Shards) {
		t.Fatalf("docker ran %d times, want the version probe and one per shard: %+v", len(calls), calls)
	}
	if want := []string{"run", "--rm", "--network", "none", "rknn-toolkit2:2.3.2", "python3", "-m", "pip", "show", "rknn-toolkit2"}; !reflect.DeepEqual(calls[0].Argv, want) {
		t.Errorf("version probe %q, want %q", calls[0].Argv, want)
	}
	builds := callsOf(testbin.ReadJSONL[fakeCall](t, log), "python3")[1:] // after pip show
	for i, s := range m.Shards {
		argv := calls[1+i].Argv
		if !reflect.DeepEqual(append([]string{"docker"}, argv...), res.Commands[i]) {
			t.Errorf("shard %d ran %q, the result says %q", i, argv, res.Commands[i])
		}
		if v := testbin.FlagValues(argv, "--network"); !reflect.DeepEqual(v, []string{"none"}) {
			t.Errorf("shard %d: --network %q", i, v)
		}
		mounts := testbin.FlagValues(argv, "-v")
		if len(mounts) != 2 || mounts[0] != chain+":/edgectl/chain:ro" || !strings.HasSuffix(mounts[1], ":/edgectl/work") {
			t.Errorf("shard %d mounts %q", i, mounts)
		}
		if uid := os.Getuid(); uid > 0 && !slices.Contains(argv, "--user") {
			t.Errorf("shard %d: docker without --user: %q", i, argv)
		}
		if tail := argv[len(argv)-5:]; !reflect.DeepEqual(tail, []string{"rknn-toolkit2:2.3.2", "python3", "/edgectl/work/" + scriptName, "/edgectl/work/" + jobName, strconv.Itoa(i)}) {
			t.Errorf("shard %d runs %q", i, tail)
		}
		b := builds[i]
		wantCfg := map[string]any{"target_platform": "rk3588", "float_dtype": "float16", "optimization_level": float64(0), "disable_rules": anySlice(fusionRules)}
		if !reflect.DeepEqual(b.Config, wantCfg) {
			t.Errorf("shard %d rknn.config %v, want %v", i, b.Config, wantCfg)
		}
		var names []any
		var sizes []any
		for _, in := range s.Inputs {
			names = append(names, in.Name)
			sizes = append(sizes, anySlice(in.Shape))
		}
		if b.Load["model"] != "/edgectl/chain/"+s.File || !reflect.DeepEqual(b.Load["inputs"], names) || !reflect.DeepEqual(b.Load["input_size_list"], sizes) ||
			len(b.Load["outputs"].([]any)) != len(s.Outputs) {
			t.Errorf("shard %d load_onnx %v", i, b.Load)
		}
		// The manifest names each file with its digest and the toolkit.
		data, err := os.ReadFile(filepath.Join(chain, s.RKNN))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if s.RKNN != strings.TrimSuffix(s.File, ".onnx")+".rknn" || s.RKNNSHA256 != hex.EncodeToString(sum[:]) || s.RKNNToolkit != "2.3.2" {
			t.Errorf("shard %d manifest entry %s %s %s", i, s.RKNN, s.RKNNSHA256, s.RKNNToolkit)
		}
		if ev.count(progress.Start, "build "+s.File) != 1 || ev.count(progress.Done, "build "+s.File) != 1 {
			t.Errorf("shard %d: start/done events missing", i)
		}
	}
	if ev.count(progress.ToolLog, "") < 4*len(m.Shards) {
		t.Errorf("the toolkit's log did not come through as tool_log events (%d)", ev.count(progress.ToolLog, ""))
	}
	testbin.NoTemporaries(t, chain)
}

func anySlice[T any](v []T) []any {
	out := make([]any, len(v))
	for i, x := range v {
		if n, ok := any(x).(int); ok {
			out[i] = float64(n)
		} else {
			out[i] = x
		}
	}
	return out
}

// scanLines feeds r's lines to sc and out as a build's run does
// (container.Lines: the toolkit's tqdm bars redraw with a bare \r).
func scanLines(r io.Reader, sc *logScanner, out func(string)) {
	for lines := container.Lines(r); lines.Scan(); {
		sc.add(lines.Text())
		out(lines.Text())
	}
}

// TestBuildFailureDiagnosedNoPartialSet: a toolkit failure on one shard
// is explained from its log (the real REGTASK text among them), the build
// stops there, and the chain is as it was — no .rknn of the shards that
// compiled, the manifest byte for byte, no work directory.
func TestBuildFailureDiagnosedNoPartialSet(t *testing.T) {
	for _, c := range []struct {
		barrier, fail, kind, fix string
	}{
		{BarrierPill, "1:regtask", FailRegtask, "smaller --sram-kb"},
		{BarrierPill, "2:fused", FailFused, "--barrier rules or both"},
		{BarrierRules, "2:fused", FailFused, "although disable_rules lists it"},
		{BarrierPill, "0:opset", FailOpset, "opset_version=12"},
		{BarrierPill, "3:oom", FailOOM, "more RAM"},
		{BarrierPill, "1:silent", FailOutput, "the printed command"},
	} {
		t.Run(c.fail+"-"+c.barrier, func(t *testing.T) {
			log := useFakeToolkit(t, false)
			chain := makeChain(t, c.barrier)
			names, manifest := snapshot(t, chain)
			t.Setenv("FAKE_RKNN_FAIL", c.fail)
			_, err := Build(context.Background(), BuildOptions{Dir: chain, Image: "rknn-toolkit2:2.3.2"})
			var be *BuildError
			if !errors.As(err, &be) || be.Kind != c.kind || !strings.Contains(be.Fix, c.fix) || !errors.Is(err, errkind.Tool) {
				t.Fatalf("error %v (%T), want kind %s with a fix saying %q", err, err, c.kind, c.fix)
			}
			shard, _ := strconv.Atoi(c.fail[:1])
			if want := "shard_0" + c.fail[:1] + ".onnx"; be.Shard != want || !strings.HasPrefix(err.Error(), want+": ") {
				t.Errorf("failure names %q (%v), want %s", be.Shard, err, want)
			}
			if c.kind == FailRegtask && !strings.Contains(be.Line, "REGTASK") {
				t.Errorf("log line %q", be.Line)
			}
			if n := len(callsOf(testbin.ReadJSONL[fakeCall](t, log), "docker")); n != 2+shard {
				t.Errorf("docker ran %d times: the build must stop at the failing shard", n)
			}
			if n2, m2 := snapshot(t, chain); !reflect.DeepEqual(n2, names) || m2 != manifest {
				t.Errorf("the chain changed: %q → %q", names, n2)
			}
		})
	}
}

// TestBuildTimeoutStopsTheShard: a toolkit that hangs is stopped at
// --timeout (the container killed by name, the native process group
// killed), reported as a timeout, and leaves nothing.
func TestBuildTimeoutStopsTheShard(t *testing.T) {
	for _, native := range []bool{false, true} {
		t.Run("native="+strconv.FormatBool(native), func(t *testing.T) {
			log := useFakeToolkit(t, native)
			chain := makeChain(t, BarrierPill)
			names, manifest := snapshot(t, chain)
			t.Setenv("FAKE_RKNN_FAIL", "1:hang")
			opts := BuildOptions{Dir: chain, Image: "rknn-toolkit2:2.3.2", Timeout: time.Second}
			if native {
				opts.Image, opts.Native = "", true
			}
			t0 := time.Now()
			_, err := Build(context.Background(), opts)
			var be *BuildError
			if !errors.As(err, &be) || be.Kind != FailTimeout || be.Shard != "shard_01.onnx" || !strings.Contains(err.Error(), "--timeout 1s") {
				t.Fatalf("error %v, want a timeout on shard_01.onnx", err)
			}
			if d := time.Since(t0); d > 15*time.Second {
				t.Errorf("the hung shard was stopped after %s", d)
			}
			if !native {
				calls := callsOf(testbin.ReadJSONL[fakeCall](t, log), "docker")
				last := calls[len(calls)-1].Argv
				name := testbin.FlagValues(calls[2].Argv, "--name")
				if len(name) != 1 || !reflect.DeepEqual(last, []string{"kill", name[0]}) {
					t.Errorf("the container was not killed by name: last call %q, name %q", last, name)
				}
			}
			if n2, m2 := snapshot(t, chain); !reflect.DeepEqual(n2, names) || m2 != manifest {
				t.Errorf("the chain changed: %q → %q", names, n2)
			}
		})
	}
}

// TestBuildDryRunRunsNothing: the script, the job and every command, and
// not one process started or file written.
func TestBuildDryRunRunsNothing(t *testing.T) {
	log := useFakeToolkit(t, false)
	chain := makeChain(t, BarrierBoth)
	names, manifest := snapshot(t, chain)
	res, err := Build(context.Background(), BuildOptions{Dir: chain, Image: "rknn-toolkit2:2.3.2", DryRun: true, Runtime: "podman"})
	if err != nil {
		t.Fatal(err)
	}
	if calls := testbin.ReadJSONL[fakeCall](t, log); len(calls) != 0 {
		t.Fatalf("a dry run ran %+v", calls)
	}
	if len(res.Commands) != 4 || res.Commands[0][0] != "podman" || !slices.Contains(res.Commands[0], "label=disable") || slices.Contains(res.Commands[0], "--user") {
		t.Errorf("commands %q", res.Commands)
	}
	var job buildJob
	if err := json.Unmarshal([]byte(res.Job), &job); err != nil || len(job.Shards) != 4 || job.Shards[3].ONNX != "/edgectl/chain/shard_03.onnx" ||
		!reflect.DeepEqual(job.DisableRules, fusionRules) {
		t.Errorf("job %v: %s", err, res.Job)
	}
	if !strings.Contains(res.Script, "rknn.build(do_quantization=False)") {
		t.Errorf("script %s", res.Script)
	}
	if n2, m2 := snapshot(t, chain); !reflect.DeepEqual(n2, names) || m2 != manifest {
		t.Errorf("a dry run changed the chain: %q → %q", names, n2)
	}
}

// TestBuildNative: an installed toolkit (python3 on PATH) runs the same
// script with host paths, one process per shard; a rebuild with another
// toolkit replaces the set and the manifest's record of it.
func TestBuildNative(t *testing.T) {
	log := useFakeToolkit(t, true)
	chain := makeChain(t, BarrierPill)
	res, err := Build(context.Background(), BuildOptions{Dir: chain, Native: true})
	if err != nil {
		t.Fatal(err)
	}
	calls := callsOf(testbin.ReadJSONL[fakeCall](t, log), "python3")
	if len(calls) != 5 || !reflect.DeepEqual(calls[0].Argv, []string{"-m", "pip", "show", "rknn-toolkit2"}) {
		t.Fatalf("python3 calls %+v", calls)
	}
	for i, c := range calls[1:] {
		if !filepath.IsAbs(c.Argv[0]) || filepath.Base(c.Argv[0]) != scriptName || c.Argv[2] != strconv.Itoa(i) || c.Load["model"] != filepath.Join(chain, res.Shards[i].File) {
			t.Errorf("shard %d: %q %v", i, c.Argv, c.Load)
		}
		if _, ok := c.Config["disable_rules"]; ok {
			t.Errorf("pill chain: rknn.config got disable_rules %v", c.Config)
		}
	}
	if res.Runtime != RuntimeNative || res.Python == "" || res.Commands[0][0] != res.Python {
		t.Errorf("result %+v", res)
	}
	t.Setenv("FAKE_RKNN_VERSION", "2.1.0")
	if _, err := Build(context.Background(), BuildOptions{Dir: chain, Native: true}); err != nil {
		t.Fatal(err)
	}
	m, err := rknnchain.Read(chain)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Shards {
		data, _ := os.ReadFile(filepath.Join(chain, s.RKNN))
		if s.RKNNToolkit != "2.1.0" || !strings.Contains(string(data), "v2.1.0") {
			t.Errorf("%s after a rebuild: toolkit %s, file %q", s.File, s.RKNNToolkit, data)
		}
	}
	testbin.NoTemporaries(t, chain)
}

// TestBuildRefusals: what a build refuses before compiling anything, each
// with its kind.
func TestBuildRefusals(t *testing.T) {
	useFakeToolkit(t, false)
	chain := makeChain(t, BarrierPill)
	for _, c := range []struct {
		name string
		opts BuildOptions
		env  string
		kind string
	}{
		{"no toolkit named", BuildOptions{Dir: chain}, "", FailInput},
		{"missing image", BuildOptions{Dir: chain, Image: "rknn-toolkit2:9.9"}, "", FailImage},
		{"image without the toolkit", BuildOptions{Dir: chain, Image: "rknn-toolkit2:2.3.2"}, "FAKE_RKNN_MISSING", FailImage},
		{"bad target", BuildOptions{Dir: chain, Image: "rknn-toolkit2:2.3.2", Target: "rk9999"}, "", FailInput},
		{"native and image", BuildOptions{Dir: chain, Image: "x", Native: true}, "", FailInput},
		{"not a chain", BuildOptions{Dir: t.TempDir(), Image: "rknn-toolkit2:2.3.2"}, "", FailInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv(c.env, "1")
			}
			_, err := Build(context.Background(), c.opts)
			var be *BuildError
			if !errors.As(err, &be) || be.Kind != c.kind {
				t.Fatalf("error %v, want kind %s", err, c.kind)
			}
			if want := map[bool]errkind.Kind{true: errkind.Input, false: errkind.Tool}[c.kind == FailInput]; !errors.Is(err, want) {
				t.Errorf("%v is not %s", err, want)
			}
		})
	}
	testbin.NoTemporaries(t, chain)
}

// TestBuildWarnsWhenDisableRulesIgnored: a build that succeeds although
// the toolkit applied a rule the manifest disables says so (the tiles may
// have been fused back) and still records the set.
func TestBuildWarnsWhenDisableRulesIgnored(t *testing.T) {
	useFakeToolkit(t, false)
	chain := makeChain(t, BarrierRules)
	t.Setenv("FAKE_RKNN_FAIL", "1:fuse-ok")
	var ev events
	res, err := Build(context.Background(), BuildOptions{Dir: chain, Image: "rknn-toolkit2:2.3.2", OnEvent: ev.on})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "shard_01.onnx: rknn-toolkit2 2.3.2 applied fuse_matmul_softmax_matmul_to_sdpa although disable_rules lists it") ||
		ev.count(progress.Warning, "") != 1 {
		t.Fatalf("warnings %q", res.Warnings)
	}
	if m, err := rknnchain.Read(chain); err != nil || !m.Built() {
		t.Fatalf("manifest %v", err)
	}
}
