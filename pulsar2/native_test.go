package pulsar2

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/axllm"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/testbin"
)

// fakePulsar2 is the native stand-in for an installed compiler.
const fakePulsar2 = "github.com/edgectl/edgectl/pulsar2/testdata/fakepulsar2"

// nativeCall is one line of fakepulsar2's FAKE_PULSAR2_LOG.
type nativeCall struct {
	Argv       []string `json:"argv"`
	PythonPath string   `json:"pythonpath"`
	ShimFirst  bool     `json:"shim_first"`
	ConvEU     string   `json:"float_matmul_use_conv_eu"`
}

// useFakeNative installs the fake compiler as DIR/pulsar2 and the fake
// container runtime first on PATH (so a stray container call is logged),
// and returns the compiler's path, its call log and the docker log.
func useFakeNative(t *testing.T) (bin, calls, dockerLog string) {
	t.Helper()
	dockerLog = useFakeDocker(t, "pulsar2:5.2")
	// testbin.Dir links the built program; ResolveNative reports the target.
	bin = testbin.Build(t, fakePulsar2, "pulsar2")
	calls = filepath.Join(t.TempDir(), "pulsar2.log")
	t.Setenv("FAKE_PULSAR2_LOG", calls)
	t.Setenv("PYTHONPATH", "")
	return bin, calls, dockerLog
}

// tempPrefix is how atomicfile names the temporaries beside base.
func tempPrefix(base string) string { return strings.TrimSuffix(atomicfile.TempPattern(base), "*") }

func TestNativeBuildEndToEnd(t *testing.T) {
	bin, calls, dockerLog := useFakeNative(t)
	model, emb := makeModel(t, modelSpec{layers: 3, hidden: 64, vocab: 6400, extra: map[string]any{"kv_cache_len": 1023}})
	out := filepath.Join(t.TempDir(), "qwen3-ax650")
	var logb bytes.Buffer
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Pulsar2Bin: bin, Log: &logb, CheckLevel: 1})
	if err != nil {
		t.Fatalf("Build: %v\nlog:\n%s", err, logb.String())
	}
	if res.Runtime != RuntimeNative || res.Pulsar2Bin != bin || res.PulsarVersion != "5.2" || res.Builder != BuilderLLMBuild {
		t.Errorf("runtime %s bin %s version %s builder %s", res.Runtime, res.Pulsar2Bin, res.PulsarVersion, res.Builder)
	}
	if d := testbin.ReadJSONL[[]string](t, dockerLog); len(d) != 0 {
		t.Errorf("a native build called the container runtime: %q", d)
	}
	cs := testbin.ReadJSONL[nativeCall](t, calls)
	if len(cs) != 2 || strings.Join(cs[0].Argv[1:], " ") != "version" {
		t.Fatalf("compiler calls %+v, want version then llm_build", cs)
	}
	argv := cs[1].Argv
	if got := testbin.FlagValues(argv, "--input_path"); len(got) != 1 || got[0] != model {
		t.Errorf("--input_path %q, want the model directory %s", got, model)
	}
	if got := testbin.FlagValues(argv, "--output_path"); len(got) != 1 || !strings.HasPrefix(filepath.Base(got[0]), tempPrefix("qwen3-ax650")) {
		t.Errorf("--output_path %q, want a temporary beside OUT", got)
	}
	if cs[1].ConvEU != "1" || cs[1].PythonPath != "" {
		t.Errorf("env: FLOAT_MATMUL_USE_CONV_EU=%q PYTHONPATH=%q", cs[1].ConvEU, cs[1].PythonPath)
	}
	for _, m := range []string{"prepare", "build", "check"} {
		if !(&logScanner{markers: res.Markers}).has(m) {
			t.Errorf("marker %q not recognized; markers %v", m, res.Markers)
		}
	}
	if _, err := axllm.Verify(out); err != nil {
		t.Fatal(err)
	}
	checkEmbedding(t, filepath.Join(out, axllm.EmbedFileName), emb)
	bi := axllm.Describe(out).Build
	if bi == nil || bi.Pulsar2Bin != bin || bi.Image != "" {
		t.Errorf("build info %+v", bi)
	}
	testbin.NoTemporaries(t, filepath.Dir(out))
}

// The shim goes first on the compiler's PYTHONPATH, ahead of the user's,
// and is what turns the groupN assertion into a build.
func TestNativeShimFirstOnPythonPath(t *testing.T) {
	needPython3(t)
	bin, calls, dockerLog := useFakeNative(t)
	userPath := t.TempDir()
	t.Setenv("PYTHONPATH", userPath)
	t.Setenv("FAKE_PULSAR2_FAIL", "groupn")
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
	out := filepath.Join(t.TempDir(), "o")
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Pulsar2Bin: bin, Builder: BuilderLLMBuild,
		Shim: ShimOptions{RelaxGroupN: true}})
	if err != nil {
		t.Fatal(err)
	}
	cs := testbin.ReadJSONL[nativeCall](t, calls)
	if len(cs) != 1 {
		t.Fatalf("compiler calls %+v, want one (--builder skips the version probe)", cs)
	}
	parts := filepath.SplitList(cs[0].PythonPath)
	if !cs[0].ShimFirst || len(parts) != 2 || parts[1] != userPath || !strings.HasPrefix(filepath.Base(parts[0]), tempPrefix("o.shim")) {
		t.Errorf("PYTHONPATH %q (shim first: %v), want the shim temporary then %s", cs[0].PythonPath, cs[0].ShimFirst, userPath)
	}
	if len(res.ShimLog) == 0 || !strings.Contains(res.ShimLog[0], "relax-groupn") {
		t.Errorf("shim log %q: the hook did not fire", res.ShimLog)
	}
	if d := testbin.ReadJSONL[[]string](t, dockerLog); len(d) != 0 {
		t.Errorf("container runtime called: %q", d)
	}
	testbin.NoTemporaries(t, filepath.Dir(out))
}

func TestNativeKnownFailures(t *testing.T) {
	cases := []struct{ fail, kind, fixHas string }{
		{"tile", FailTile, "--kv-cache-len"},
		{"groupn", FailGroupN, "--relax-groupn"},
		{"group_size", FailGroupSize, `"group_size": 128`},
		{"fp32", FailFP32DType, "--fp32-as-bf16"},
		{"oom", FailOOM, "RAM"},
		{"silent", FailOutput, "ax-llm#62"},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			if c.fail == "groupn" || c.fail == "fp32" {
				needPython3(t)
			}
			bin, _, dockerLog := useFakeNative(t)
			t.Setenv("FAKE_PULSAR2_FAIL", c.fail)
			model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
			out := filepath.Join(t.TempDir(), "o")
			var logb bytes.Buffer
			_, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Pulsar2Bin: bin, Log: &logb})
			var be *BuildError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want *BuildError\nlog:\n%s", err, logb.String())
			}
			if be.Kind != c.kind || !strings.Contains(be.Fix, c.fixHas) {
				t.Errorf("kind %q fix %q, want %q with %q", be.Kind, be.Fix, c.kind, c.fixHas)
			}
			if errkind.Of(err) != errkind.Tool {
				t.Errorf("kind %v, want %v", errkind.Of(err), errkind.Tool)
			}
			if fileExists(out) {
				t.Error("output directory created by a failed build")
			}
			testbin.NoTemporaries(t, filepath.Dir(out))
			if d := testbin.ReadJSONL[[]string](t, dockerLog); len(d) != 0 {
				t.Errorf("container runtime called: %q", d)
			}
		})
	}
}

func TestNativeDryRun(t *testing.T) {
	bin, calls, dockerLog := useFakeNative(t)
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
	out := filepath.Join(t.TempDir(), "o")
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Pulsar2Bin: bin, DryRun: true,
		Shim: ShimOptions{AliasLambert: true}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := ShellQuote(res.Command)
	if !strings.HasPrefix(cmd, "env PYTHONPATH=") || !strings.Contains(cmd, " FLOAT_MATMUL_USE_CONV_EU=1 "+bin+" llm_build --input_path "+model) {
		t.Errorf("dry-run command %s", cmd)
	}
	if fileExists(out) || len(testbin.ReadJSONL[[]string](t, dockerLog)) != 0 {
		t.Error("dry run wrote output or called the container runtime")
	}
	if cs := testbin.ReadJSONL[nativeCall](t, calls); len(cs) != 1 || cs[0].Argv[1] != "version" {
		t.Errorf("dry run ran %+v, want only the version probe", cs)
	}
}

// The seed's loop: `pulsar2` on PATH is a wrapper that runs `pulsar2`
// again, or a chain of links that comes back on itself. Both are refused
// before anything runs, with the fix.
func TestNativeRefusesSelfCallingPulsar2(t *testing.T) {
	real, calls, _ := useFakeNative(t)
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "pulsar2-wrapper")
	os.WriteFile(wrapper, []byte("#!/bin/sh\n# set up the compiler's environment\nexport FLOAT_MATMUL_USE_CONV_EU=1\nexec pulsar2 \"$@\"\n"), 0o755)
	link := filepath.Join(dir, "pulsar2")
	if err := os.Symlink("pulsar2-wrapper", link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	loopA, loopB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Symlink("b", loopA)
	os.Symlink("a", loopB)

	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
	for _, c := range []struct{ bin, msgHas string }{
		{"pulsar2", "line 4 of the script " + wrapper + " runs `pulsar2`"},
		{link, link + " → " + wrapper},
		{loopA, "symlink loop: " + loopA + " → " + loopB + " → " + loopA},
	} {
		out := filepath.Join(t.TempDir(), "o")
		_, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Pulsar2Bin: c.bin})
		var be *BuildError
		if !errors.As(err, &be) || be.Kind != FailRuntime || !strings.Contains(be.Msg, c.msgHas) || be.Fix != loopFix {
			t.Errorf("--pulsar2-bin %s: err %v, want a runtime failure naming %q with the loop fix", c.bin, err, c.msgHas)
		}
		if errkind.Of(err) != errkind.Tool || fileExists(out) {
			t.Errorf("--pulsar2-bin %s: kind %v, output %v", c.bin, errkind.Of(err), fileExists(out))
		}
	}
	if cs := testbin.ReadJSONL[nativeCall](t, calls); len(cs) != 0 {
		t.Errorf("the compiler ran despite the loop: %+v", cs)
	}

	// A wrapper that runs the compiler by path, or names pulsar2 only as
	// an argument (python3 -m pulsar2), is not a loop.
	for _, body := range []string{"exec " + real + " \"$@\"", "exec python3 -m pulsar2 \"$@\"  # pulsar2 again"} {
		os.WriteFile(wrapper, []byte("#!/bin/sh\n"+body+"\n"), 0o755)
		got, err := ResolveNative("pulsar2")
		if err != nil || got != wrapper {
			t.Errorf("wrapper %q: ResolveNative = %q, %v; want %s", body, got, err, wrapper)
		}
	}
}
