package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/rknnchain"
	"github.com/edgectl/edgectl/internal/testbin"
	"github.com/edgectl/edgectl/rknn"
)

// TestRknnBuildCLI: --dry-run prints the script, the job and one command
// per shard and runs nothing; a build through the fake toolkit container
// prints OUT and records the .rknn files; a REGTASK failure exits with the
// tool code, explains itself on stderr (and as build_failed with --json),
// and leaves OUT as it was; no toolkit named is an input error.
func TestRknnBuildCLI(t *testing.T) {
	dir := t.TempDir()
	model := smallEncoder(t, dir)
	out := filepath.Join(dir, "out")
	if code, _, stderr := runCLI(t, "rknn", "shard", model, "-o", out, "--sram-kb", "4", "--barrier", "rules"); code != 0 {
		t.Fatalf("shard: exit %d: %s", code, stderr)
	}
	t.Setenv("PATH", testbin.Dir(t, map[string]string{"docker": testbin.FakeRKNN})+string(os.PathListSeparator)+os.Getenv("PATH"))
	calls := filepath.Join(t.TempDir(), "calls.jsonl")
	t.Setenv("FAKE_RKNN_LOG", calls)
	t.Setenv("FAKE_RKNN_STATE", t.TempDir())
	t.Setenv("FAKE_RKNN_FAIL", "")

	code, stdout, stderr := runCLI(t, "rknn", "build", out, "--image", "rknn-toolkit2:2.3.2", "--dry-run")
	if code != 0 || !strings.Contains(stdout, "from rknn.api import RKNN") || !strings.Contains(stdout, `"disable_rules": [`) ||
		strings.Count(stdout, "docker run --rm --name edgectl-rknn-") != 4 {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(calls); !os.IsNotExist(err) {
		t.Fatal("a dry run started the toolkit")
	}

	t.Setenv("FAKE_RKNN_FAIL", "2:regtask")
	before, _ := os.ReadFile(filepath.Join(out, rknnchain.ManifestFile))
	code, stdout, stderr = runCLI(t, "rknn", "build", out, "--image", "rknn-toolkit2:2.3.2", "--json")
	var failed struct {
		Event   string          `json:"event"`
		Failure rknn.BuildError `json:"failure"`
	}
	if code != exitTool || json.Unmarshal([]byte(strings.SplitN(stdout, "\n", 2)[0]), &failed) != nil || failed.Failure.Kind != rknn.FailRegtask || failed.Failure.Shard != "shard_02.onnx" ||
		!strings.Contains(stderr, "--sram-kb") || !strings.Contains(stderr, "  | E RKNN:") {
		t.Fatalf("REGTASK: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(out, rknnchain.ManifestFile)); string(after) != string(before) {
		t.Fatal("a failed build changed the manifest")
	}
	if m, _ := filepath.Glob(filepath.Join(out, "*.rknn")); len(m) != 0 {
		t.Fatalf("a failed build left %q", m)
	}

	t.Setenv("FAKE_RKNN_FAIL", "")
	code, stdout, stderr = runCLI(t, "rknn", "build", out, "--image", "rknn-toolkit2:2.3.2")
	m, err := rknnchain.Read(out)
	if code != 0 || strings.TrimSpace(stdout) != out || err != nil || !m.Built() || !strings.Contains(stderr, "built 4 shards for rk3588 with rknn-toolkit2 2.3.2") {
		t.Fatalf("build: exit %d, %v\nstdout %s\nstderr %s", code, err, stdout, stderr)
	}
	if code, _, stderr = runCLI(t, "rknn", "build", out); code != exitError || !strings.Contains(stderr, "--image IMG") {
		t.Fatalf("no toolkit: exit %d, %s", code, stderr)
	}
}
