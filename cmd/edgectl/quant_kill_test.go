package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/testbin"
)

// temporaries lists the edgectl temporaries in dir.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if _, ok := atomicfile.IsTemp(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out
}

// Killed `quant pack` runs leave their half-written output as a
// recognisable temporary; the next run of the same command removes every
// one whose process is gone (and says so), and leaves a live process's
// alone.
func TestQuantPackRemovesTemporariesOfKilledRuns(t *testing.T) {
	in := bitnetCheckpoint(t)
	outDir := t.TempDir()
	out := filepath.Join(outDir, "m.gguf")
	args := []string{"quant", "pack", in, "-o", out, "--format", "tq2_0"}
	// Deterministic kills mid-write (after the 1st, 4th and 9th tensor):
	// each leaves its temporary, and each next run first removes the one
	// before it, so one is left at a time however often runs are killed.
	var prev string
	for _, n := range []int{1, 4, 9} {
		killed, code, stderr := edgectlRun(t, "quant.tensor:"+strconv.Itoa(n), args...)
		if !killed {
			t.Fatalf("quant.tensor:%d: not killed (exit %d): %s", n, code, stderr)
		}
		left := temporaries(t, outDir)
		if len(left) != 1 || left[0] == prev || !strings.HasPrefix(left[0], ".m.gguf.edgectl-tmp-") {
			t.Fatalf("after kill at quant.tensor:%d: %v (previous %q); want this run's temporary only", n, left, prev)
		}
		prev = left[0]
	}
	// One at a random moment: as soon as its own temporary appears.
	cmd := exec.Command(edgectlBin(t), args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mine := ".m.gguf.edgectl-tmp-" + strconv.Itoa(cmd.Process.Pid) + "-"
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if l := temporaries(t, outDir); len(l) == 1 && strings.HasPrefix(l[0], mine) {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if !signaled(cmd.Wait()) {
		t.Fatal("the random kill came after the run ended")
	}
	if left := temporaries(t, outDir); len(left) != 1 || !strings.HasPrefix(left[0], mine) {
		t.Fatalf("after the random kill: %v", left)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a killed run published %s", out)
	}
	// A temporary of a live process (this test) and another output's
	// orphan must survive.
	live := filepath.Join(outDir, ".m.gguf.edgectl-tmp-"+strconv.Itoa(os.Getpid())+"-1")
	os.WriteFile(live, []byte("in progress"), 0o644)
	other := filepath.Join(outDir, ".x.gguf.edgectl-tmp-"+strconv.Itoa(testbin.DeadPID(t))+"-1")
	os.WriteFile(other, []byte("another command's"), 0o644)

	killed, code, stderr := edgectlRun(t, "", args...)
	if killed || code != 0 {
		t.Fatalf("clean run: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "temporaries left by killed runs") {
		t.Errorf("no word of the cleanup: %s", stderr)
	}
	got := temporaries(t, outDir)
	if len(got) != 2 || !slices.Contains(got, filepath.Base(live)) || !slices.Contains(got, filepath.Base(other)) {
		t.Fatalf("after the clean run: %v; want only the live one and the other output's", got)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
}

// The CLI refuses an -o that is the input, through a symlinked alias of
// the model directory or a hard link, with exit 2 and one line; the input
// is untouched. A new file inside the model directory is written.
func TestQuantPackRefusesAliasedOutput(t *testing.T) {
	in := bitnetCheckpoint(t)
	shard := filepath.Join(in, "model-00001-of-00002.safetensors")
	before, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(t.TempDir(), "alias")
	os.Symlink(in, alias)
	hard := filepath.Join(t.TempDir(), "hard.gguf")
	os.Link(shard, hard)
	for _, out := range []string{shard, filepath.Join(alias, filepath.Base(shard)), hard} {
		code, _, stderr := runCLI(t, "quant", "pack", in, "-o", out, "--format", "tq2_0")
		if code != 2 || !strings.Contains(stderr, "refusing to write -o "+out+": it is the input file ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("-o %s: exit %d: %q", out, code, stderr)
		}
	}
	code, _, stderr := runCLI(t, "sherry", "pack", alias, "-o", shard)
	if code != 2 || !strings.Contains(stderr, "refusing to write") {
		t.Errorf("sherry pack over the input: exit %d: %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "quant", "pack", in, "-o", filepath.Join(alias, "gptq"), "--format", "gptq-int4")
	if code != 2 || !strings.Contains(stderr, "it lies inside the input directory") {
		t.Errorf("gptq inside the input: exit %d: %q", code, stderr)
	}
	if after, _ := os.ReadFile(shard); string(after) != string(before) {
		t.Fatal("input shard modified")
	}
	if code, _, stderr := runCLI(t, "quant", "pack", in, "-o", filepath.Join(in, "model.gguf"), "--format", "tq2_0"); code != 0 {
		t.Fatalf("new file in the model directory: exit %d: %s", code, stderr)
	}
}

// patch -o refuses an output inside the input (also through an alias)
// with exit 2; pulsar2 build too.
func TestPatchAndPulsar2RefuseNestedOutput(t *testing.T) {
	in := bitnetCheckpoint(t)
	alias := filepath.Join(t.TempDir(), "alias")
	os.Symlink(in, alias)
	for _, args := range [][]string{
		{"patch", "config", in, "-o", filepath.Join(alias, "fixed")},
		{"patch", "layernorm", in, "-o", in},
		{"pulsar2", "build", in, "-o", filepath.Join(alias, "ax650"), "--dry-run", "--image", "pulsar2:5.2", "--runtime", "docker", "--tokenizer-type", "LLaMA"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "refusing to write -o ") {
			t.Errorf("%v: exit %d: %q", args, code, stderr)
		}
	}
}
