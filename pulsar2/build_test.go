package pulsar2

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/testbin"

	"github.com/edgectl/edgectl/format/safetensors"
)

func TestBuildLLMBuildEndToEnd(t *testing.T) {
	log := useFakeDocker(t, "pulsar2:5.2")
	model, emb := makeModel(t, modelSpec{layers: 3, hidden: 64, vocab: 6400, extra: map[string]any{"kv_cache_len": 1023}})
	out := filepath.Join(t.TempDir(), "out", "qwen3-ax650")
	var logb bytes.Buffer
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", Log: &logb, CheckLevel: 1})
	if err != nil {
		t.Fatalf("Build: %v\nlog:\n%s", err, logb.String())
	}
	if res.Builder != BuilderLLMBuild || res.PulsarVersion != "5.2" || res.Runtime != "docker" {
		t.Errorf("builder %s version %s runtime %s", res.Builder, res.PulsarVersion, res.Runtime)
	}
	for _, m := range []string{"prepare", "build", "cos_sim", "check"} {
		if !(&logScanner{markers: res.Markers}).has(m) {
			t.Errorf("marker %q not recognized; markers %v", m, res.Markers)
		}
	}
	calls := testbin.ReadJSONL[[]string](t, log)
	if len(calls) != 2 || !reflect.DeepEqual(calls[0][1:], []string{"run", "--rm", "pulsar2:5.2", "pulsar2", "version"}) {
		t.Fatalf("docker calls: %q", calls)
	}
	argv := calls[1]
	if !reflect.DeepEqual(argv, res.Command) {
		t.Errorf("result command %q differs from what ran %q", res.Command, argv)
	}
	check := func(flag string, want ...string) {
		t.Helper()
		if got := testbin.FlagValues(argv, flag); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %q, want %q", flag, got, want)
		}
	}
	check("--kv_cache_len", "1023") // from config.json
	check("--prefill_len", "128")
	check("--last_kv_cache_len", "128", "256", "384", "512")
	check("--chip", "AX650")
	check("-w", "s8")
	check("--hidden_state_type", "bf16")
	check("-c", "1")
	check("--input_path", "/edgectl/model")
	real, _ := filepath.EvalSymlinks(model)
	if v := testbin.FlagValues(argv, "-v"); len(v) != 2 || v[0] != real+":/edgectl/model:ro" || !strings.HasSuffix(v[1], ":/edgectl/out") {
		t.Errorf("mounts %q", v)
	}
	if strings.Contains(strings.Join(argv, " "), "PYTHONPATH") {
		t.Errorf("no shim asked for, but PYTHONPATH set: %q", argv)
	}

	c, err := axllm.Verify(out)
	if err != nil {
		t.Fatal(err)
	}
	want := axllm.Config{ModelName: "Qwen3-Tiny", TokenizerType: "Qwen3", URLTokenizerModel: "qwen3_tokenizer.txt",
		TemplateFilenameAxmodel: "qwen3_p128_l%d_together.axmodel", AxmodelNum: 3, FilenamePostAxmodel: "qwen3_post.axmodel",
		FilenameTokensEmbed: axllm.EmbedFileName, TokensEmbedNum: 6400, TokensEmbedSize: 64}
	got := *c
	got.SystemPrompt, got.PostConfigPath, got.Bos, got.Eos, got.UseMmapLoadEmbed = "", "", nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config.json\n got %+v\nwant %+v", got, want)
	}
	if c.Bos == nil || *c.Bos || c.PostConfigPath != axllm.PostConfigName {
		t.Errorf("bos %v post_config_path %q: Qwen has no BOS", c.Bos, c.PostConfigPath)
	}
	checkEmbedding(t, filepath.Join(out, axllm.EmbedFileName), emb)
	pc, err := axllm.ReadPostConfig(filepath.Join(out, axllm.PostConfigName))
	if err != nil {
		t.Fatal(err)
	}
	if pc.Temperature != 0.6 || pc.TopK != 20 || pc.TopP != 0.95 || !pc.EnableTopKSampling || pc.EnableRepetitionPenalty {
		t.Errorf("post_config from generation_config: %+v", pc)
	}
	for _, f := range []string{"tokenizer/tokenizer.json", "tokenizer/config.json", "tokenizer/chat_template.jinja", "tokenizer/generation_config.json"} {
		if !fileExists(filepath.Join(out, f)) {
			t.Errorf("%s not copied", f)
		}
	}
	tok, _ := os.ReadFile(filepath.Join(out, "qwen3_tokenizer.txt"))
	if !strings.HasPrefix(string(tok), "430 1\n") {
		t.Errorf("tokenizer.txt starts %q", firstLines(string(tok), 3))
	}
	bi := axllm.Describe(out).Build
	if bi == nil || bi.KVCacheLen != 1023 || bi.PulsarVersion != "5.2" || bi.WeightType != "s8" {
		t.Errorf("build info %+v", bi)
	}
	testbin.NoTemporaries(t, filepath.Dir(out))
}

// llm_build2 is chosen for Pulsar2 ≥ 6 found on the machine, a GPTQ int4
// checkpoint gets -w s4, and a BF16 embedding is copied byte for byte.
func TestBuildLLMBuild2NewestImageGPTQ(t *testing.T) {
	log := useFakeDocker(t, "pulsar2:4.2,pulsar2:7.0,pulsar2:5.2,other:9.9")
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400, dtype: safetensors.BF16,
		extra: map[string]any{"quantization_config": map[string]any{"quant_method": "gptq", "bits": 4, "group_size": 128}}})
	out := filepath.Join(t.TempDir(), "o")
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Runtime: "podman"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Image != "pulsar2:7.0" || res.Builder != BuilderLLMBuild2 || res.WeightType != "s4" {
		t.Errorf("image %s builder %s weight %s", res.Image, res.Builder, res.WeightType)
	}
	calls := testbin.ReadJSONL[[]string](t, log)
	argv := calls[len(calls)-1]
	if argv[0] != "podman" {
		t.Errorf("ran %s, want podman", argv[0])
	}
	for flag, want := range map[string]string{"--max_context": "2048", "--prefill_len": "1024", "--prefill_step_size": "128", "-w": "s4"} {
		if got := testbin.FlagValues(argv, flag); len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want %s", flag, got, want)
		}
	}
	if len(testbin.FlagValues(argv, "--kv_cache_len")) > 0 || len(testbin.FlagValues(argv, "--user")) > 0 {
		t.Errorf("llm_build2 under podman got --kv_cache_len or --user: %q", argv)
	}
	// BF16 in, same bytes out.
	ck, _ := safetensors.OpenCheckpoint(model)
	defer ck.Close()
	f, et, _ := FindEmbedding(ck, false)
	src, _ := f.Bytes(et)
	got, _ := os.ReadFile(filepath.Join(out, axllm.EmbedFileName))
	if !bytes.Equal(src, got) {
		t.Error("BF16 embedding not copied as is")
	}
}

func TestBuildKnownFailures(t *testing.T) {
	cases := []struct {
		fail, kind, fixHas string
		opts               func(*BuildOptions)
	}{
		{"tile", FailTile, "--kv-cache-len", nil},
		{"groupn", FailGroupN, "--relax-groupn", nil},
		{"group_size", FailGroupSize, `"group_size": 128`, nil},
		{"fp32", FailFP32DType, "--fp32-as-bf16", nil},
		{"oom", FailOOM, "RAM", nil},
		{"silent", FailOutput, "ax-llm#62", nil},
		{"", FailImage, "docker load", func(o *BuildOptions) { o.Image = "pulsar2:9.9" }},
		{"", FailArgs, "--builder", func(o *BuildOptions) { o.Builder = BuilderLLMBuild2 }},
		{"", FailRuntime, "systemctl start docker", func(o *BuildOptions) { t.Setenv("FAKE_DOCKER_DAEMON", "down") }},
		{"", FailRuntime, "systemctl start docker", func(o *BuildOptions) { o.Image = ""; t.Setenv("FAKE_DOCKER_DAEMON", "down") }},
		{"", FailRuntime, "systemctl start docker", func(o *BuildOptions) { o.Builder = BuilderLLMBuild; t.Setenv("FAKE_DOCKER_DAEMON", "down") }},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			if c.fail == "groupn" || c.fail == "fp32" {
				needPython3(t) // the fake compiler's front end runs in python3
			}
			useFakeDocker(t, "pulsar2:5.2")
			t.Setenv("FAKE_PULSAR2_FAIL", c.fail)
			model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
			out := filepath.Join(t.TempDir(), "o")
			opts := BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2"}
			if c.opts != nil {
				c.opts(&opts)
			}
			var logb bytes.Buffer
			opts.Log = &logb
			_, err := Build(context.Background(), opts)
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
			if strings.Contains(be.Error(), "\n") {
				t.Errorf("error is not one line: %q", be.Error())
			}
			if fileExists(out) {
				t.Error("output directory created by a failed build")
			}
			testbin.NoTemporaries(t, filepath.Dir(out))
		})
	}
}

// The shim flags turn the groupN and FP32 failures into builds, and --chip
// LAMBERT turns on the alias by itself.
func TestBuildShimFixesFailures(t *testing.T) {
	cases := []struct {
		fail string
		opts BuildOptions
		hook string
	}{
		{"groupn", BuildOptions{Shim: ShimOptions{RelaxGroupN: true}}, "relax-groupn"},
		{"fp32", BuildOptions{Shim: ShimOptions{FP32AsBF16: true}}, "fp32-as-bf16"},
		{"", BuildOptions{Chip: "lambert"}, "alias-lambert"},
	}
	for _, c := range cases {
		t.Run(c.hook, func(t *testing.T) {
			needPython3(t) // the fake compiler's front end runs in python3
			log := useFakeDocker(t, "pulsar2:5.2")
			t.Setenv("FAKE_PULSAR2_FAIL", c.fail)
			model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
			o := c.opts
			o.ModelDir, o.OutDir, o.Image = model, filepath.Join(t.TempDir(), "o"), "pulsar2:5.2"
			res, err := Build(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.ShimLog) == 0 {
				t.Errorf("no shim log line: the %s hook did not fire", c.hook)
			}
			for _, l := range res.ShimLog {
				if !strings.HasPrefix(l, ShimLogPrefix+" "+c.hook+": ") {
					t.Errorf("shim log line %q is not from the %s hook", l, c.hook)
				}
			}
			calls := testbin.ReadJSONL[[]string](t, log)
			argv := calls[len(calls)-1]
			if e := testbin.FlagValues(argv, "-e"); !contains(e, "PYTHONPATH=/edgectl/shim") {
				t.Errorf("env %q lacks the shim path", e)
			}
			if v := testbin.FlagValues(argv, "-v"); len(v) != 3 || !strings.HasSuffix(v[2], ":/edgectl/shim:ro") {
				t.Errorf("mounts %q lack the shim", v)
			}
		})
	}
}

func needPython3(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestBuildInputErrors(t *testing.T) {
	cases := []struct {
		name, msgHas string
		spec         modelSpec
		opts         BuildOptions
		existingOut  bool
	}{
		{"kv not 128k-1", "2047", modelSpec{}, BuildOptions{KVCacheLen: 2048}, false},
		{"kv from config", "--kv-cache-len 1000", modelSpec{extra: map[string]any{"kv_cache_len": 1000}}, BuildOptions{}, false},
		{"gptq without group_size", "group_size", modelSpec{extra: map[string]any{"quantization_config": map[string]any{"quant_method": "gptq", "bits": 4}}}, BuildOptions{}, false},
		{"unknown quant", "bitnet", modelSpec{extra: map[string]any{"quantization_config": map[string]any{"quant_method": "bitnet"}}}, BuildOptions{}, false},
		{"chip", "AX650", modelSpec{}, BuildOptions{Chip: "AX9999"}, false},
		{"hidden mismatch", "hidden_size is 48", modelSpec{extra: map[string]any{"hidden_size": 48}}, BuildOptions{}, false},
		{"max prefill", "--max-prefill", modelSpec{}, BuildOptions{MaxPrefill: 100}, false},
		{"out exists", "already exists", modelSpec{}, BuildOptions{}, true},
		{"unknown tokenizer type", "--tokenizer-type", modelSpec{modelType: "gemma3"}, BuildOptions{}, false},
		{"no tokenizer", "no tokenizer.json and no *_tokenizer.txt", modelSpec{noTok: true}, BuildOptions{}, false},
		{"sentencepiece tokenizer", "not byte-level BPE", modelSpec{noTok: true, files: map[string]string{
			"tokenizer.json": `{"model": {"type": "BPE", "vocab": {"<unk>": 0, "\u2581the": 1}, "merges": []}, "added_tokens": []}`}}, BuildOptions{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := useFakeDocker(t, "pulsar2:5.2")
			if c.spec.layers == 0 {
				c.spec.layers, c.spec.hidden, c.spec.vocab = 2, 32, 6400
			}
			model, _ := makeModel(t, c.spec)
			o := c.opts
			o.ModelDir, o.OutDir, o.Image = model, filepath.Join(t.TempDir(), "o"), "pulsar2:5.2"
			if c.existingOut {
				os.Mkdir(o.OutDir, 0o755)
			}
			_, err := Build(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), c.msgHas) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.msgHas)
			}
			if errkind.Of(err) != errkind.Input {
				t.Errorf("kind %v, want %v", errkind.Of(err), errkind.Input)
			}
			if calls := testbin.ReadJSONL[[]string](t, log); len(calls) > 0 {
				t.Errorf("input fault reached the runtime: %q", calls)
			}
		})
	}
}

// --dry-run prints the command a real run executes: same arguments except
// the random container name and the temporary output and shim paths.
func TestBuildDryRunMatchesRealRun(t *testing.T) {
	log := useFakeDocker(t, "pulsar2:5.2")
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
	out := filepath.Join(t.TempDir(), "o")
	o := BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", Shim: ShimOptions{RelaxGroupN: true}, DryRun: true}
	dry, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if fileExists(out) {
		t.Fatal("dry run created the output")
	}
	o.DryRun = false
	if _, err := Build(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	calls := testbin.ReadJSONL[[]string](t, log)
	real := calls[len(calls)-1]
	norm := func(argv []string) string {
		s := strings.Join(argv, "\x00")
		v := testbin.FlagValues(argv, "-v")
		s = strings.ReplaceAll(s, strings.TrimSuffix(v[1], ":/edgectl/out"), "OUT")
		s = strings.ReplaceAll(s, strings.TrimSuffix(v[2], ":/edgectl/shim:ro"), "SHIM")
		return strings.ReplaceAll(s, testbin.FlagValues(argv, "--name")[0], "NAME")
	}
	if norm(dry.Command) != norm(real) {
		t.Errorf("dry run\n %q\nreal run\n %q", dry.Command, real)
	}
	if !strings.HasSuffix(testbin.FlagValues(dry.Command, "-v")[1], out+":/edgectl/out") {
		t.Errorf("dry run mounts %q, want the final output path", testbin.FlagValues(dry.Command, "-v"))
	}
}

// Cancelling a build kills the container by name, not just the CLI.
func TestBuildCancelKillsContainer(t *testing.T) {
	log := useFakeDocker(t, "pulsar2:5.2")
	t.Setenv("FAKE_PULSAR2_FAIL", "hang")
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
	out := filepath.Join(t.TempDir(), "o")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Build(ctx, BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", Builder: BuilderLLMBuild})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("cancel took %v", d)
	}
	calls := testbin.ReadJSONL[[]string](t, log)
	name := testbin.FlagValues(calls[0], "--name")[0]
	last := calls[len(calls)-1]
	if !reflect.DeepEqual(last[1:], []string{"kill", name}) {
		t.Errorf("last runtime call %q, want kill %s", last, name)
	}
	if fileExists(out) {
		t.Error("cancelled build left its output")
	}
	testbin.NoTemporaries(t, filepath.Dir(out))
}

// A Hugging Face cache snapshot is a directory of symlinks into ../../blobs:
// the mount must hold both or the links dangle inside the container.
func TestModelMountFollowsHFCacheSymlinks(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "models--Qwen--Qwen3-0.6B")
	snap := filepath.Join(repo, "snapshots", "abc123")
	os.MkdirAll(filepath.Join(repo, "blobs"), 0o755)
	os.MkdirAll(snap, 0o755)
	os.WriteFile(filepath.Join(repo, "blobs", "f00d"), []byte("{}"), 0o644)
	os.Symlink("../../blobs/f00d", filepath.Join(snap, "config.json"))
	root, inside, err := modelMount(snap)
	if err != nil {
		t.Fatal(err)
	}
	realRepo, _ := filepath.EvalSymlinks(repo)
	if root != realRepo || inside != "/edgectl/model/snapshots/abc123" {
		t.Errorf("mount %s at %s, want %s and /edgectl/model/snapshots/abc123", root, inside, realRepo)
	}
	if n := modelNameFromPath(snap); n != "Qwen/Qwen3-0.6B" {
		t.Errorf("model name %q", n)
	}
}

func TestBuildResultJSON(t *testing.T) {
	useFakeDocker(t, "pulsar2:5.2")
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: filepath.Join(t.TempDir(), "o"), Image: "pulsar2:5.2"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	var back map[string]any
	json.Unmarshal(b, &back)
	cfg, _ := back["axllm_config"].(map[string]any)
	if cfg["template_filename_axmodel"] != "qwen3_p128_l%d_together.axmodel" || back["builder"] != "llm_build" {
		t.Errorf("result JSON %s", b)
	}
}

// A low cos_sim from pulsar2's own check (-c 1) is a warning on the result.
func TestBuildWarnsOnLowCosSim(t *testing.T) {
	useFakeDocker(t, "pulsar2:5.2")
	t.Setenv("FAKE_PULSAR2_COS", "0.6123")
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: filepath.Join(t.TempDir(), "o"), Image: "pulsar2:5.2", CheckLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range res.Warnings {
		found = found || strings.Contains(w, "cos_sim 0.6123")
	}
	if !found {
		t.Errorf("warnings %q lack the low cos_sim", res.Warnings)
	}
}

// A model directory that ships AXERA's tokenizer file has it used as is.
func TestBuildUsesShippedTokenizerTxt(t *testing.T) {
	useFakeDocker(t, "pulsar2:5.2")
	txt := "430 1\n1 1 0\n2 2 \n3\nIQ==\nIg==\nPHxlbmR8Pg==\n"
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400, noTok: true, files: map[string]string{"qwen3_tokenizer.txt": txt}})
	out := filepath.Join(t.TempDir(), "o")
	res, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(out, res.Tokenizer))
	if res.Tokenizer != "qwen3_tokenizer.txt" || string(b) != txt {
		t.Errorf("tokenizer %s = %q", res.Tokenizer, b)
	}
}
