package prep

import (
	"encoding/json"
	"errors"

	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/testbin"

	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/format/axllm"
)

// fakeBins puts the pulsar2 tests' fake container runtime (as docker) and
// the axcl tests' fake vendor CLI (as axllm) first on PATH.
func fakeBins(t *testing.T) string {
	t.Helper()
	dir := testbin.Dir(t, map[string]string{"docker": testbin.FakeDocker, "axllm": testbin.FakeAxllm})
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_DOCKER_IMAGES", "pulsar2:5.2")
	return dir
}

func ax650Opts(tmp, src string) Options {
	return Options{Source: src, Target: TargetAX650, Out: filepath.Join(tmp, "OUT"), CacheDir: filepath.Join(tmp, "cache"), KVCacheLen: 2048, Image: "pulsar2:5.2"}
}

func TestE2EHubToAX650AnswersThroughAxcl(t *testing.T) {
	bins := fakeBins(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "llama-tiny")
	writeLlama(t, src)
	fakeHub(t, "acme/llama-tiny", src)
	o := ax650Opts(tmp, "acme/llama-tiny")
	var log eventLog
	res, err := Run(context.Background(), log.sink(), o)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, log.errOut.String())
	}
	evs := log.events(t)
	if s := stepsWith(evs, "done"); strings.Join(s, ",") != "pull,check,import,doctor,patch-config,layernorm,quant,pulsar2,out" {
		t.Errorf("steps done: %v", s)
	}
	// The directory is what axllm loads: the layout check pulsar2 itself
	// applies, the KV length 2048 → 2047, and the int4 weights.
	cfg, err := axllm.Verify(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	bi := axllm.Describe(o.Out).Build
	if bi == nil || bi.KVCacheLen != 2047 || bi.WeightType != "s4" || bi.Source != "llama-tiny" {
		t.Errorf("build info %+v", bi)
	}
	if cfg.ModelName == "" {
		t.Errorf("axllm config %+v", cfg)
	}
	var ro runOptions
	if err := json.Unmarshal(res.Manifest.Options, &ro); err != nil || ro.KVCacheLen != 2047 {
		t.Errorf("manifest options %s: %v", res.Manifest.Options, err)
	}
	// serve's axcl lane drives the vendor CLI (here the fake) on the OUT dir.
	if !axcl.IsModelDir(o.Out) {
		t.Fatalf("axcl does not recognize %s", o.Out)
	}
	e := axcl.New(axcl.Options{Command: []string{filepath.Join(bins, "axllm"), "run", "{dir}"}, SMI: []string{}})
	m, err := e.Load(context.Background(), o.Out, engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	must(t, err)
	defer s.Close()
	var text strings.Builder
	r, err := s.Generate(context.Background(), engine.Request{Prompt: "Once upon a time", MaxTokens: 16}, func(tok engine.Token) error {
		text.WriteString(tok.Text)
		return nil
	})
	if err != nil || strings.TrimSpace(text.String()) == "" || r.CompletionTokens == 0 {
		t.Fatalf("axcl lane answered %q %+v, %v", text.String(), r, err)
	}
	t.Logf("axcl lane answers %q (ttft %v)", text.String(), r.TTFT)

	// And through serve --models, which routes the compiled dir to axcl.
	models := filepath.Join(tmp, "models")
	must(t, os.MkdirAll(models, 0o755))
	must(t, os.Rename(o.Out, filepath.Join(models, "llama-tiny-ax650")))
	if got := serveGenerate(t, models, filepath.Join(bins, "axllm"), "llama-tiny-ax650", "Once upon a time", 16); strings.TrimSpace(got) == "" {
		t.Error("serve's axcl lane answered nothing")
	} else {
		t.Logf("serve (axcl lane) answers %q", got)
	}
}

func TestAX650DoctorBlocksMoE(t *testing.T) {
	fakeBins(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "moe")
	must(t, os.MkdirAll(src, 0o755))
	for _, f := range []string{"model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(tinyStories, f))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(src, f), b, 0o644))
	}
	cfg, err := os.ReadFile(filepath.Join(tinyStories, "config.json"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(src, "config.json"), []byte(strings.Replace(string(cfg), `"vocab_size": 2048`, `"vocab_size": 2048, "num_local_experts": 8`, 1)), 0o644))
	var log eventLog
	_, err = Run(context.Background(), log.sink(), ax650Opts(tmp, src))
	// Blocked by the first step, before any work: no target takes MoE.
	if err == nil || !errors.Is(err, errkind.Blocked) || !strings.Contains(err.Error(), "8 experts") || !strings.Contains(err.Error(), src+"/config.json") {
		t.Fatalf("MoE on ax650: %v (kind %v)", err, errkind.Of(err))
	}
	evs := log.events(t)
	if s := stepsWith(evs, "error"); strings.Join(s, ",") != "check" {
		t.Errorf("error events: %v", s)
	}
}

func TestAX650CompilerFailureIsAToolError(t *testing.T) {
	fakeBins(t)
	t.Setenv("FAKE_PULSAR2_FAIL", "oom")
	tmp := t.TempDir()
	src := filepath.Join(tmp, "llama-tiny")
	writeLlama(t, src)
	_, err := Run(context.Background(), nil, ax650Opts(tmp, src))
	if err == nil || !errors.Is(err, errkind.Tool) || !strings.Contains(err.Error(), "pulsar2") {
		t.Fatalf("OOM-killed compiler: %v (kind %v)", err, errkind.Of(err))
	}
	t.Logf("%v", err)
	// The steps before the compiler are cached: the retry starts at pulsar2.
	t.Setenv("FAKE_PULSAR2_FAIL", "")
	var log eventLog
	if _, err := Run(context.Background(), log.sink(), ax650Opts(tmp, src)); err != nil {
		t.Fatal(err)
	}
	if s := stepsWith(log.events(t), "skip"); strings.Join(s, ",") != "check,import,doctor,patch-config,layernorm,quant" {
		t.Errorf("retry skipped %v", s)
	}
}

// TestMain removes the fake programs built for the package's tests.
func TestMain(m *testing.M) { testbin.Main(m) }
