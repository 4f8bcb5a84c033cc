package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/onnx"
	"github.com/edgectl/edgectl/internal/testmodel"
	"github.com/edgectl/edgectl/rknn"
)

// smallEncoder writes dir/enc.onnx, a SigLIP-shaped encoder small enough
// to shard and verify in a second, and returns its path.
func smallEncoder(t *testing.T, dir string) string {
	t.Helper()
	model := filepath.Join(dir, "enc.onnx")
	if err := onnx.WriteFile(model, testmodel.ViT(testmodel.ViTSpec{Tokens: 64, Hidden: 48, Heads: 3, Layers: 2, Seed: 3}), onnx.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return model
}

// TestRknnShardVerifyCLI: edgectl rknn shard writes OUT (path on stdout,
// the passes on stderr), verify --json reports the chain's cosine, a bad
// flag is a usage error and a verify that fails exits 1.
func TestRknnShardVerifyCLI(t *testing.T) {
	dir := t.TempDir()
	model := smallEncoder(t, dir)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "rknn", "shard", model, "-o", out, "--sram-kb", "4", "--cores", "2")
	if code != 0 || strings.TrimSpace(stdout) != out || !strings.Contains(stderr, "tile: ") || !strings.Contains(stderr, "scale: s = ") {
		t.Fatalf("shard: exit %d\nstdout %q\nstderr %s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "rknn", "verify", out, "--model", model, "--json")
	var r rknn.VerifyReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 {
		t.Fatalf("verify: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if !r.OK || r.Cosine < 0.999 || len(r.Shards) != 4 || r.Shards[2].Core != 0 || r.MaxSoftmaxBytes > 4096 {
		t.Fatalf("verify report %+v", r)
	}
	code, stdout, _ = runCLI(t, "rknn", "verify", out, "--model", model)
	if code != 0 || !strings.Contains(stdout, "end to end: cosine") || !strings.Contains(stdout, "shard_03.onnx") {
		t.Fatalf("verify table: exit %d\n%s", code, stdout)
	}
	// Unscaled (s = 1), the chain overflows FP16 as the original does:
	// verify must fail it.
	unscaled := filepath.Join(dir, "unscaled")
	if code, _, stderr = runCLI(t, "rknn", "shard", model, "-o", unscaled, "--sram-kb", "4", "--scale", "1"); code != 0 {
		t.Fatalf("shard --scale 1: exit %d, %s", code, stderr)
	}
	if code, _, stderr = runCLI(t, "rknn", "verify", unscaled, "--model", model); code != exitError || !strings.Contains(stderr, "does not verify") {
		t.Fatalf("verify of an unscaled chain: exit %d, %s", code, stderr)
	}
	if code, _, stderr = runCLI(t, "rknn", "shard", model, "-o", filepath.Join(dir, "o2"), "--barrier", "wall"); code != exitUsage || !strings.Contains(stderr, "--barrier") {
		t.Fatalf("bad --barrier: exit %d, %s", code, stderr)
	}
	if code, _, _ = runCLI(t, "rknn", "verify", out); code != exitUsage {
		t.Fatalf("verify without --model: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "o2")); !os.IsNotExist(err) {
		t.Fatal("a refused shard left its OUT")
	}
}
