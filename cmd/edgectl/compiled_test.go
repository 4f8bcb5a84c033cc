package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/doctor"
	"github.com/edgectl/edgectl/internal/testbin"
)

// nativeBuilt compiles tinyQwen through the CLI with a fake native
// pulsar2 (--pulsar2-bin) and a fake docker that must never be called.
func nativeBuilt(t *testing.T) string {
	t.Helper()
	withFakeDocker(t)
	dockerLog := filepath.Join(t.TempDir(), "docker.log")
	t.Setenv("FAKE_DOCKER_LOG", dockerLog)
	t.Setenv("FAKE_PULSAR2_LOG", "")
	bin := testbin.Build(t, "github.com/edgectl/edgectl/pulsar2/testdata/fakepulsar2", "pulsar2")
	out := filepath.Join(t.TempDir(), "tiny-ax650")
	code, stdout, stderr := pulsar2CLI(t, "pulsar2", "build", tinyQwen(t), "-o", out, "--pulsar2-bin", bin, "--kv-cache-len", "1023")
	if code != 0 || strings.TrimSpace(stdout) != out {
		t.Fatalf("build: exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	if _, err := os.Stat(dockerLog); err == nil {
		b, _ := os.ReadFile(dockerLog)
		t.Fatalf("--pulsar2-bin called the container runtime: %s", b)
	}
	return out
}

// copyDir copies a flat compiled directory (and its tokenizer/ sidecar).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

func TestPulsar2NativeFailureExit5(t *testing.T) {
	withFakeDocker(t)
	t.Setenv("FAKE_PULSAR2_FAIL", "tile")
	bin := testbin.Build(t, "github.com/edgectl/edgectl/pulsar2/testdata/fakepulsar2", "pulsar2")
	out := filepath.Join(t.TempDir(), "o")
	code, _, stderr := pulsar2CLI(t, "pulsar2", "build", tinyQwen(t), "-o", out, "--pulsar2-bin", bin)
	if code != exitTool || !strings.Contains(stderr, "TileFailException") || !strings.Contains(stderr, "fix: lower --kv-cache-len") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a failed build left its output")
	}
}

func TestInspectDoctorCompiledDirs(t *testing.T) {
	good := nativeBuilt(t)

	// Good: inspect describes the compiled model, doctor passes.
	code, out, stderr := runCLI(t, "inspect", good)
	t.Logf("inspect %s:\n%s", good, out)
	for _, want := range []string{"format:       ax-llm", "layers:       2 (qwen3_p128_l%d_together.axmodel)", "vocab 6400 × hidden 16",
		"tokenizer_type Qwen3", "kv length:    1023", "post_config:  temperature"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("inspect good: exit %d, no %q in\n%s%s", code, want, out, stderr)
		}
	}
	if strings.Contains(out, "parameters") || strings.Contains(out, "check it") {
		t.Errorf("inspect good described a checkpoint or asked for doctor:\n%s", out)
	}
	code, r := doctorJSON(t, good)
	if code != 0 || r.Verdict != "pass" || r.Kind != "ax-llm" || len(r.Findings) != 0 {
		t.Errorf("doctor good: exit %d %+v", code, r)
	}

	// A 0-byte config.json (as Hub repos ship), and the runtime's log.
	stub := filepath.Join(t.TempDir(), "stub")
	copyDir(t, good, stub)
	os.WriteFile(filepath.Join(stub, "config.json"), nil, 0o644)
	code, out, _ = runCLI(t, "inspect", stub)
	if code != 0 || !strings.Contains(out, "config.json:  a 0-byte stub") || !strings.Contains(out, "layers:       2 (qwen3_p128_l%d_together.axmodel)") {
		t.Errorf("inspect stub: exit %d\n%s", code, out)
	}
	log := filepath.Join(t.TempDir(), "axllm.log")
	os.WriteFile(log, []byte("[I][ Init][ 110]: LLM init start\n[E][ Run][ 301]: axclrtEngineExecute failed 0x8030070c\n"), 0o644)
	code, r = doctorJSON(t, stub, "--log", log)
	ids := findingIDs(r)
	if code != exitFixable || ids["config-empty"] != doctor.Fixable || ids["runtime-0x8030070c"] != doctor.Fixable || len(ids) != 2 {
		t.Errorf("doctor stub: exit %d findings %v", code, ids)
	}
	for _, f := range r.Findings {
		if !strings.Contains(f.Fix, "edgectl pulsar2 axllm-config") {
			t.Errorf("%s: fix %q", f.ID, f.Fix)
		}
		if f.ID == "runtime-0x8030070c" && !strings.Contains(f.Evidence, "axllm.log:2:") {
			t.Errorf("evidence %q does not name the log line", f.Evidence)
		}
	}
	// The fix it gives works.
	if code, _, stderr := runCLI(t, "pulsar2", "axllm-config", stub, "--in-place"); code != 0 {
		t.Fatalf("axllm-config: exit %d %s", code, stderr)
	}
	if code, r = doctorJSON(t, stub); code != 0 {
		t.Errorf("doctor after the fix: exit %d %v", code, findingIDs(r))
	}

	// A wrong key type (a string where axllm reads a number), plus a
	// post_config.json missing a key.
	typed := filepath.Join(t.TempDir(), "typed")
	copyDir(t, good, typed)
	var cfg map[string]any
	b, _ := os.ReadFile(filepath.Join(typed, "config.json"))
	json.Unmarshal(b, &cfg)
	cfg["axmodel_num"] = "2"
	b, _ = json.Marshal(cfg)
	os.WriteFile(filepath.Join(typed, "config.json"), b, 0o644)
	code, out, _ = runCLI(t, "inspect", typed)
	if code != 0 || !strings.Contains(out, `"axmodel_num" holds string`) || !strings.Contains(out, "check it:     edgectl doctor") {
		t.Errorf("inspect typed: exit %d\n%s", code, out)
	}
	code, r = doctorJSON(t, typed)
	if ids := findingIDs(r); code != exitFixable || ids["config-key-type"] != doctor.Fixable || len(ids) != 1 {
		t.Errorf("doctor typed: exit %d findings %v", code, ids)
	}
	for _, f := range r.Findings {
		if !strings.Contains(f.Evidence, `"axmodel_num" = "2"`) || !strings.Contains(f.Fix, "JSON integer") {
			t.Errorf("finding %+v", f)
		}
	}
}
