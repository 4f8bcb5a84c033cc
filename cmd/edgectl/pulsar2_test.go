package main

import (
	"github.com/edgectl/edgectl/internal/testbin"

	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/pulsar2"
)

// TestMain removes the fake programs built for the package's tests.
func TestMain(m *testing.M) { testbin.Main(m) }

func pulsar2CLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), &cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

// withFakeDocker builds pulsar2's fake container runtime and puts it first
// on PATH as docker.
func withFakeDocker(t *testing.T) {
	t.Helper()
	fakeDockerDir := testbin.Dir(t, map[string]string{"docker": testbin.FakeDocker})
	t.Setenv("PATH", fakeDockerDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_DOCKER_IMAGES", "pulsar2:5.2")
	t.Setenv("FAKE_DOCKER_LOG", "")
	t.Setenv("FAKE_PULSAR2_FAIL", "")
}

// tinyQwen writes a 2-layer Qwen3-shaped checkpoint with pulsar2's test
// tokenizer.
func tinyQwen(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny-qwen3")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
  "hidden_size": 16, "num_hidden_layers": 2, "vocab_size": 6400, "num_attention_heads": 2, "torch_dtype": "bfloat16"}`), 0o644)
	emb := make([]byte, 6400*16*2)
	f, _ := os.Create(filepath.Join(dir, "model.safetensors"))
	if err := safetensors.Write(f, nil, []safetensors.Source{{Name: "model.embed_tokens.weight", DType: safetensors.BF16, Shape: []int64{6400, 16}, WriteTo: safetensors.FromBytes(emb)}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, n := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "pulsar2", "testdata", "qwen3-tok", n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	return dir
}

func TestPulsar2ShimCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shim")
	code, out, stderr := pulsar2CLI(t, "pulsar2", "shim", "-o", dir, "--relax-groupn", "--json")
	var r struct {
		Path  string   `json:"path"`
		Hooks []string `json:"hooks"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Hooks) != 1 || r.Hooks[0] != "relax-groupn" {
		t.Fatalf("exit %d out %q stderr %q", code, out, stderr)
	}
	b, err := os.ReadFile(r.Path)
	if err != nil || !pulsar2.IsShim(b) {
		t.Fatalf("shim not written: %v", err)
	}
	if code, _, _ := pulsar2CLI(t, "pulsar2", "shim"); code != exitUsage {
		t.Errorf("shim without -o: exit %d", code)
	}
}

func TestPulsar2BuildCommand(t *testing.T) {
	withFakeDocker(t)
	model := tinyQwen(t)
	out := filepath.Join(t.TempDir(), "out")

	code, stdout, stderr := pulsar2CLI(t, "pulsar2", "build", model, "-o", out, "--image", "pulsar2:5.2", "--dry-run")
	if code != 0 || !strings.HasPrefix(stdout, "docker run --rm --name edgectl-pulsar2-") || !strings.Contains(stdout, "--kv_cache_len 2047") {
		t.Fatalf("dry run: exit %d stdout %q stderr %q", code, stdout, stderr)
	}

	code, stdout, stderr = pulsar2CLI(t, "--json", "pulsar2", "build", model, "-o", out, "--image", "pulsar2:5.2")
	var res pulsar2.BuildResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil {
		t.Fatalf("build: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if res.Config == nil || res.Config.AxmodelNum != 2 || !strings.Contains(stderr, "build llm model done!") {
		t.Errorf("result %+v; compiler log not streamed to stderr:\n%s", res, stderr)
	}
	code, stdout, _ = pulsar2CLI(t, "pulsar2", "verify", out)
	if code != 0 || !strings.Contains(stdout, "ok: tiny-qwen3, 2 layers") {
		t.Errorf("verify: exit %d %q", code, stdout)
	}
	os.Remove(filepath.Join(out, axllm.PostConfigName))
	code, _, stderr = pulsar2CLI(t, "pulsar2", "verify", out)
	if code != exitError || !strings.Contains(stderr, "post_config.json missing") {
		t.Errorf("verify of a broken dir: exit %d %q", code, stderr)
	}
}

func TestPulsar2BuildExitCodes(t *testing.T) {
	withFakeDocker(t)
	model := tinyQwen(t)
	t.Setenv("FAKE_PULSAR2_FAIL", "tile")
	code, stdout, stderr := pulsar2CLI(t, "--json", "pulsar2", "build", model, "-o", filepath.Join(t.TempDir(), "o"), "--image", "pulsar2:5.2")
	if code != exitTool || !strings.Contains(stdout, `"kind":"tile"`) || !strings.Contains(stderr, "TileFailException") {
		t.Errorf("tile failure: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	t.Setenv("FAKE_PULSAR2_FAIL", "")
	code, _, stderr = pulsar2CLI(t, "pulsar2", "build", model, "-o", filepath.Join(t.TempDir(), "o"), "--kv-cache-len", "2048")
	if code != exitError || !strings.Contains(stderr, "use 2047") {
		t.Errorf("bad kv: exit %d %q", code, stderr)
	}
	if code, _, _ := pulsar2CLI(t, "pulsar2", "build", model); code != exitUsage {
		t.Errorf("build without -o: exit %d", code)
	}
}

func TestPulsar2ImagePatchCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "not-an-image.tar")
	os.WriteFile(bad, []byte("junk"), 0o644)
	code, _, stderr := pulsar2CLI(t, "pulsar2", "image", "patch", bad, filepath.Join(dir, "out.tar"))
	if code != exitError || !strings.Contains(stderr, "not a `docker save` tarball") {
		t.Errorf("exit %d %q", code, stderr)
	}
	if code, _, _ := pulsar2CLI(t, "pulsar2", "image", "patch", bad); code != exitUsage {
		t.Errorf("one argument: exit %d", code)
	}
}

func TestPulsar2ImagePatchCommand(t *testing.T) {
	dir := t.TempDir()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A layer with a Python site-packages and a pulsar2 on PATH.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		body string
	}{{"usr/lib/python3/dist-packages/yamain/__init__.py", 0o644, ""}, {"usr/bin/pulsar2", 0o755, "#!/usr/bin/python3\n"}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(f.body))
	}
	tw.Close()
	layer, _ := tarball.LayerFromOpener(func() (goio.ReadCloser, error) { return goio.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	img, _ = mutate.AppendLayers(img, layer)
	tag, _ := name.NewTag("pulsar2:5.2")
	src := filepath.Join(dir, "ax_pulsar2_5.2.tar")
	if err := tarball.WriteToFile(src, tag, img); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "patched.tar")
	code, stdout, stderr := pulsar2CLI(t, "--json", "pulsar2", "image", "patch", src, dst, "--tag", "pulsar2:5.2-shim")
	var res pulsar2.PatchResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if res.SitePackages != "/usr/lib/python3/dist-packages" || res.Wrapper != "/usr/bin/pulsar2" || res.Tag != "pulsar2:5.2-shim" {
		t.Errorf("result %+v", res)
	}
	patched, err := tarball.ImageFromPath(dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := patched.Digest(); d.String() != res.Digest {
		t.Errorf("digest %s, result says %s", d, res.Digest)
	}
}

func TestPulsar2AxllmConfigCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qwen3-ax650")
	side := filepath.Join(dir, "qwen3_tokenizer")
	os.MkdirAll(side, 0o755)
	for _, n := range []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json", "config.json"} {
		b, _ := os.ReadFile(filepath.Join("..", "..", "pulsar2", "testdata", "qwen3-tok", n))
		os.WriteFile(filepath.Join(side, n), b, 0o644)
	}
	for i := range 8 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("qwen3_p128_l%d_together.axmodel", i)), []byte("x"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "qwen3_post.axmodel"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, axllm.EmbedFileName), make([]byte, 6400*768*2), 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), nil, 0o644)

	// doctor says it is fixable and names the command; the command fixes it.
	code, out, _ := runCLI(t, "doctor", dir)
	if code != exitFixable || !strings.Contains(out, "edgectl pulsar2 axllm-config") {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "pulsar2", "axllm-config", dir)
	if code != 0 || !strings.Contains(out, `"tokens_embed_num": 6400`) {
		t.Fatalf("dry run: exit %d %s", code, out)
	}
	if st, _ := os.Stat(filepath.Join(dir, "config.json")); st.Size() != 0 {
		t.Fatal("printing the config wrote it")
	}
	if code, _, stderr := runCLI(t, "pulsar2", "axllm-config", dir, "--in-place"); code != 0 {
		t.Fatalf("--in-place: exit %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "pulsar2", "verify", dir); code != 0 {
		t.Fatalf("verify after regeneration: exit %d %s", code, stderr)
	}
}
