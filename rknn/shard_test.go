package rknn

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/format/rknnchain"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/testbin"
	"github.com/edgectl/edgectl/internal/testmodel"
	"github.com/edgectl/edgectl/rknn/onnxeval"
)

// writeModel writes a generated encoder to dir/model.onnx.
func writeModel(t testing.TB, dir string, s testmodel.ViTSpec) string {
	t.Helper()
	p := filepath.Join(dir, "model.onnx")
	if err := onnx.WriteFile(p, testmodel.ViT(s), onnx.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return p
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// siglip shards the SigLIP-shaped encoder once for the tests that
// only read the result.
var siglip struct {
	once  sync.Once
	dir   string
	model string
	out   string
	res   *ShardResult
	err   error
}

func shardedSigLIP(t *testing.T) (model, out string, res *ShardResult) {
	t.Helper()
	siglip.once.Do(func() {
		siglip.dir, siglip.err = os.MkdirTemp("", "rknn-siglip-")
		if siglip.err != nil {
			return
		}
		siglip.model = writeModel(t, siglip.dir, testmodel.SigLIPSpec())
		siglip.out = filepath.Join(siglip.dir, "out")
		siglip.res, siglip.err = Shard(context.Background(), ShardOptions{Model: siglip.model, OutDir: siglip.out, Log: testLog{t}})
	})
	if siglip.err != nil {
		t.Fatal(siglip.err)
	}
	return siglip.model, siglip.out, siglip.res
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup() // the fake toolkit build_test.go builds
	if siglip.dir != "" {
		os.RemoveAll(siglip.dir)
	}
	os.Exit(code)
}

// TestShardedChainAgreesInFP16 is the acceptance check: on the
// SigLIP-shaped encoder (256 tokens, hidden 192, 3 heads, 2 layers, two
// channels at ±400) the shard chain evaluated with FP16 storage agrees with
// the float64 original at cosine ≥ 0.999, the unmodified model in FP16
// does not, and no tensor of the chain overflows.
func TestShardedChainAgreesInFP16(t *testing.T) {
	model, out, res := shardedSigLIP(t)
	r, err := Verify(context.Background(), VerifyOptions{Dir: out, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("s = %g; end-to-end cosine %.7f; unsharded model in FP16 %.6f", res.Scale, r.Cosine, r.UnshardedFP16Cosine)
	for _, s := range r.Shards {
		t.Logf("  %s core %d: %d ops, cosine %.6f (isolated %.6f), max |x| %.4g, softmax ≤ %d bytes", s.File, s.Core, s.Ops, s.Cosine, s.IsolatedCosine, s.MaxAbs, s.MaxSoftmaxBytes)
	}
	if !r.OK || r.Cosine < 0.999 {
		t.Fatalf("chain cosine %.6f, problems %v", r.Cosine, r.Problems)
	}
	if r.UnshardedFP16Cosine >= 0.999 {
		t.Fatalf("the unmodified model in FP16 agrees at %.6f: the test model does not overflow FP16 as SigLIP does", r.UnshardedFP16Cosine)
	}
	if res.Scale >= 1 || res.RewriteCosine < 0.99999 {
		t.Fatalf("scale %g, float64 rewrite cosine %.9f", res.Scale, res.RewriteCosine)
	}
	// The two ±400 channels dominate a cosine over everything; the ~1
	// signals beside them must survive too. Run the chain by hand (an
	// independent reading of the manifest) and compare without them.
	got, want := runChain(t, model, out)
	var g, w []float64
	for i := range want {
		if c := i % 192; c != 7 && c != 192-20 {
			g, w = append(g, got[i]), append(w, want[i])
		}
	}
	if c := onnxeval.Cosine(g, w); c < 0.999 {
		t.Fatalf("cosine over the channels without the outliers %.6f", c)
	} else {
		t.Logf("cosine without the outlier channels: %.6f", c)
	}
}

// runChain evaluates the model (float64) and the shards (FP16, in
// manifest order, host scaling included) on the seeded sample input.
func runChain(t *testing.T, model, out string) (got, want []float64) {
	m, err := rknnchain.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := onnx.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x, _, err := sampleInput(f.Graph.Input[0], "")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := onnxeval.Run(context.Background(), f.Model, map[string]*onnxeval.Tensor{"patch_embeds": x}, onnxeval.Options{Keep: func(string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]*onnxeval.Tensor{"patch_embeds": scaleTensor(x, m.InputScale)}
	for _, s := range m.Shards {
		sf, err := onnx.Open(filepath.Join(out, s.File))
		if err != nil {
			t.Fatal(err)
		}
		res, err := onnxeval.Run(context.Background(), sf.Model, vals, onnxeval.Options{FP16: true, Keep: func(string) bool { return false }})
		sf.Close()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range res {
			vals[k] = v
		}
	}
	return scaleTensor(vals["last_hidden_state"], m.OutputScale).Data, ref["last_hidden_state"].Data
}

// TestShardsFitBudgetAndRoundRobin reads the shards back from disk: every
// Softmax input fits 32 KB in FP16, shards run round-robin over 3 cores,
// every shard's inputs come from the model input or earlier shards, the
// last produces the model output, and shards use only the documented ops.
func TestShardsFitBudgetAndRoundRobin(t *testing.T) {
	_, out, _ := shardedSigLIP(t)
	m, err := rknnchain.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 4 { // 2 layers × (attention, MLP); the final LayerNorm joins the last
		t.Fatalf("%d shards, want 4", len(m.Shards))
	}
	have := map[string][]int{"patch_embeds": {1, 256, 192}}
	for i, s := range m.Shards {
		if s.Core != i%3 {
			t.Errorf("%s on core %d, want %d", s.File, s.Core, i%3)
		}
		f, err := onnx.Open(filepath.Join(out, s.File))
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]*onnxeval.Tensor{}
		for _, v := range f.Graph.Input {
			shape, ok := have[v.Name]
			if !ok {
				t.Fatalf("%s reads %q, produced by no earlier shard", s.File, v.Name)
			}
			in[v.Name] = onnxeval.New(shape, nil)
		}
		softIn := map[string]bool{}
		for _, n := range f.Graph.Node {
			if !slices.Contains(ShardOps, n.OpType) {
				t.Errorf("%s uses %s, not in ShardOps", s.File, n.OpType)
			}
			if n.OpType == "Softmax" {
				softIn[n.Input[0]] = true
			}
		}
		softmaxes := 0
		res, err := onnxeval.Run(context.Background(), f.Model, in, onnxeval.Options{FP16: true, Keep: func(string) bool { return false },
			Observe: func(name string, v *onnxeval.Tensor) {
				if softIn[name] {
					softmaxes++
					if v.Bytes16() > 32*1024 {
						t.Errorf("%s: Softmax input %q is %d bytes in FP16", s.File, name, v.Bytes16())
					}
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 && softmaxes != 12 { // 3 heads × 4 blocks of 64 rows
			t.Errorf("%s: %d Softmax tiles, want 12", s.File, softmaxes)
		}
		for _, o := range f.Graph.Output {
			have[o.Name] = res[o.Name].Shape
		}
		f.Close()
	}
	if _, ok := have["last_hidden_state"]; !ok {
		t.Fatal("no shard produces last_hidden_state")
	}
	if m.Budget.MaxSoftmaxBytes != 32*1024 || m.InputScale != 0.125 || m.OutputScale != 1 {
		t.Fatalf("budget %+v, input scale %g, output scale %g", m.Budget, m.InputScale, m.OutputScale)
	}
}

// TestShardsPassOnnxChecker: Debian's python3-onnx accepts every shard with
// check_model(full_check=True) (strict shape inference against the
// declared inputs and outputs).
func TestShardsPassOnnxChecker(t *testing.T) {
	py := testmodel.PythonONNX()
	if py == "" {
		t.Skip(testmodel.PythonONNXHint)
	}
	_, out, _ := shardedSigLIP(t)
	m, err := rknnchain.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-c", `import sys, onnx
for p in sys.argv[1:]:
    onnx.checker.check_model(onnx.load(p), full_check=True)
print(len(sys.argv) - 1)`}
	for _, s := range m.Shards {
		args = append(args, filepath.Join(out, s.File))
	}
	got, err := exec.Command(py, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("onnx.checker: %v\n%s", err, got)
	}
	if strings.TrimSpace(string(got)) != "4" {
		t.Fatalf("checked %s shards", got)
	}
}

// TestScaleOneOverflows: without the sandwich (--scale 1) the tiled chain
// overflows FP16 in LayerNorm's variance and loses the signal, the SHARD
// write-up's cosine 0.02 — scaling is what fixes it, not tiling.
func TestScaleOneOverflows(t *testing.T) {
	dir := t.TempDir()
	model := writeModel(t, dir, testmodel.SigLIPSpec())
	out := filepath.Join(dir, "out")
	if _, err := Shard(context.Background(), ShardOptions{Model: model, OutDir: out, Scale: "1", Barrier: BarrierRules}); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(context.Background(), VerifyOptions{Dir: out, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || r.Cosine >= 0.999 {
		t.Fatalf("unscaled chain cosine %.6f, ok %v", r.Cosine, r.OK)
	}
	t.Logf("unscaled chain: cosine %.6f, problems %v", r.Cosine, r.Problems)
	m, _ := rknnchain.Read(out)
	if m.Build.OptimizationLevel == nil || *m.Build.OptimizationLevel != 0 || !slices.Contains(m.Build.DisableRules, "fuse_matmul_softmax_matmul_to_sdpa") {
		t.Fatalf("--barrier rules build config: %+v", m.Build)
	}
	for _, s := range m.Shards {
		f, _ := onnx.Open(filepath.Join(out, s.File))
		for _, n := range f.Graph.Node {
			if n.OpType == "Sigmoid" {
				t.Fatalf("--barrier rules wrote a poison pill in %s", s.File)
			}
		}
		f.Close()
	}
}

// TestPillBarrier: with --barrier pill every tile after the first of an
// attention gets slice → sigmoid → ×1e-6 → add from the tile before.
func TestPillBarrier(t *testing.T) {
	_, out, _ := shardedSigLIP(t)
	f, err := onnx.Open(filepath.Join(out, "shard_00.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count := map[string]int{}
	for _, n := range f.Graph.Node {
		count[n.OpType]++
	}
	if count["Sigmoid"] != 11 || count["Softmax"] != 12 {
		t.Fatalf("ops %v: want 11 pills for 12 tiles", count)
	}
}

// TestShardFailuresLeaveNoOut: a model the passes refuse, and an existing
// OUT, fail with input errors and leave nothing behind.
func TestShardFailuresLeaveNoOut(t *testing.T) {
	dir := t.TempDir()
	m := testmodel.ViT(testmodel.ViTSpec{Tokens: 32, Hidden: 24, Heads: 2, Layers: 1}) // Softmax input 4 KB
	for _, n := range m.Graph.Node {
		if n.OpType == "Softmax" {
			n.Attribute = []*onnx.Attribute{onnx.IntAttr("axis", 2)} // over queries: not row-tileable
		}
	}
	p := filepath.Join(dir, "bad.onnx")
	if err := onnx.WriteFile(p, m, onnx.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	_, err := Shard(context.Background(), ShardOptions{Model: p, OutDir: out, SRAMKB: 1})
	if err == nil || errkind.Of(err) != errkind.Input || !strings.Contains(err.Error(), "not the last (keys)") {
		t.Fatalf("softmax over queries: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	os.Mkdir(out, 0o755)
	good := writeModel(t, dir, testmodel.ViTSpec{Tokens: 16, Hidden: 24, Heads: 2, Layers: 1})
	if _, err := Shard(context.Background(), ShardOptions{Model: good, OutDir: out}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("existing OUT: %v", err)
	}
	for _, bad := range []ShardOptions{{Barrier: "wall"}, {Scale: "-1"}, {Cores: 100}, {SRAMKB: -1}} {
		bad.Model, bad.OutDir = good, filepath.Join(dir, "x")
		if _, err := Shard(context.Background(), bad); errkind.Of(err) != errkind.Usage {
			t.Errorf("%+v: %v, want a usage error", bad, err)
		}
	}
}

// TestShardRefusesNonModels: an empty file, text, a truncated model and a
// FIFO fail with one-line input errors naming the file, in bounded time.
func TestShardRefusesNonModels(t *testing.T) {
	dir := t.TempDir()
	good := writeModel(t, dir, testmodel.ViTSpec{Tokens: 16, Hidden: 24, Heads: 2, Layers: 1})
	b, _ := os.ReadFile(good)
	files := map[string][]byte{"empty.onnx": nil, "text.onnx": []byte("name: not a model\n"), "truncated.onnx": b[:len(b)*2/3]}
	for name, data := range files {
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	fifo := filepath.Join(dir, "fifo.onnx")
	if err := syscall.Mkfifo(fifo, 0o644); err == nil {
		files["fifo.onnx"] = nil
	}
	for name := range files {
		p := filepath.Join(dir, name)
		_, err := Shard(context.Background(), ShardOptions{Model: p, OutDir: filepath.Join(dir, "out")})
		if err == nil || errkind.Of(err) != errkind.Input || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Fatal("a refused model left OUT")
	}
}

// TestSampleFile: --sample feeds raw float32 values to both shard and
// verify; a file of the wrong size is an input error saying the size.
func TestSampleFile(t *testing.T) {
	dir := t.TempDir()
	model := writeModel(t, dir, testmodel.ViTSpec{Tokens: 32, Hidden: 24, Heads: 2, Layers: 1, Seed: 9})
	sample := filepath.Join(dir, "x.f32")
	raw := make([]byte, 4*32*24)
	for i := 0; i < len(raw); i += 4 {
		binary.LittleEndian.PutUint32(raw[i:], math.Float32bits(float32(i%7)-3))
	}
	os.WriteFile(sample, raw, 0o644)
	out := filepath.Join(dir, "out")
	res, err := Shard(context.Background(), ShardOptions{Model: model, OutDir: out, Sample: sample, SRAMKB: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Sample != "x.f32" {
		t.Fatalf("manifest sample %q", res.Manifest.Sample)
	}
	r, err := Verify(context.Background(), VerifyOptions{Dir: out, Model: model, Sample: sample})
	if err != nil || !r.OK || r.Sample != "x.f32" {
		t.Fatalf("verify with the sample: %v %+v", err, r)
	}
	os.WriteFile(sample, raw[:100], 0o644)
	if _, err := Verify(context.Background(), VerifyOptions{Dir: out, Model: model, Sample: sample}); errkind.Of(err) != errkind.Input || !strings.Contains(err.Error(), "is 100 bytes") {
		t.Fatalf("short sample: %v", err)
	}
}
