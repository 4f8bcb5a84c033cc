package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/failpoint"
	"github.com/edgectl/edgectl/internal/testbin"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// The real binary, so that kill -9 hits a real process at real moments.
func edgectlBin(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "github.com/edgectl/edgectl/cmd/edgectl", "edgectl")
}

// edgectlRun runs the binary with EDGECTL_FAILPOINT=fp ("" for none) and
// reports whether SIGKILL ended it, and its exit code otherwise.
func edgectlRun(t *testing.T, fp string, args ...string) (killed bool, code int, stderr string) {
	t.Helper()
	cmd := exec.Command(edgectlBin(t), args...)
	cmd.Env = append(os.Environ(), failpoint.Env+"="+fp)
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	return signaled(err), cmd.ProcessState.ExitCode(), errb.String()
}

func signaled(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func omitNorms(name string) bool { return strings.HasSuffix(name, "norm.weight") }

// pristine writes a sharded checkpoint lacking its norms once per test and
// returns it with the SHA-256 of each file.
func pristine(t *testing.T, spec testmodel.Spec) (string, map[string][32]byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pristine")
	if err := testmodel.Write(dir, spec); err != nil {
		t.Fatal(err)
	}
	return dir, testmodel.TreeDigests(t, dir)
}

// cloneDir hard-links src's files into a new directory: an in-place patch
// never writes into an existing file, so the clone shares nothing that
// changes (and a patch that did would change the pristine hashes, which
// the checks compare against).
func cloneDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "model")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	es, _ := os.ReadDir(src)
	for _, e := range es {
		if err := os.Link(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// checkBackups: every .orig present is the original file.
func checkBackups(t *testing.T, dir string, orig map[string][32]byte) {
	t.Helper()
	for name, h := range testmodel.TreeDigests(t, dir) {
		if base, ok := strings.CutSuffix(name, ".orig"); ok && orig[base] != h {
			t.Errorf("%s is not the original %s", name, base)
		}
	}
}

// checkLoads: the checkpoint opens and every tensor's bytes are readable.
func checkLoads(t *testing.T, dir string) *safetensors.Checkpoint {
	t.Helper()
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatalf("checkpoint does not load: %v", err)
	}
	for _, f := range ck.Files {
		for _, tn := range f.Tensors {
			if _, err := f.Bytes(tn); err != nil {
				t.Fatalf("%s: %v", tn.Name, err)
			}
		}
	}
	return ck
}

// checkFinished asserts the state every finished in-place layernorm patch
// reaches: it loads, the index lists every tensor where it is with an exact
// total_size, the norms are there, every rewritten file has its original as
// .orig, and no journal, staged or temporary file is left.
func checkFinished(t *testing.T, dir string, orig map[string][32]byte) {
	t.Helper()
	ck := checkLoads(t, dir)
	defer ck.Close()
	n := 0
	for _, f := range ck.Files {
		for _, tn := range f.Tensors {
			n++
			if ck.Index.WeightMap[tn.Name] != filepath.Base(f.Path) {
				t.Errorf("index maps %s to %q; it is in %s", tn.Name, ck.Index.WeightMap[tn.Name], filepath.Base(f.Path))
			}
		}
	}
	if len(ck.Index.WeightMap) != n || ck.Index.TotalSize() != ck.TensorBytes() {
		t.Errorf("index: %d entries for %d tensors; total_size %d for %d bytes", len(ck.Index.WeightMap), n, ck.Index.TotalSize(), ck.TensorBytes())
	}
	if _, _, ok := ck.Lookup("model.norm.weight"); !ok {
		t.Error("model.norm.weight not added")
	}
	now := testmodel.TreeDigests(t, dir)
	for name := range now {
		if strings.HasPrefix(name, ".") {
			t.Errorf("left behind: %s", name)
		}
	}
	for name := range orig {
		if _, ok := now[name+".orig"]; !ok && (strings.HasSuffix(name, ".safetensors") || name == safetensors.IndexName) {
			t.Errorf("no backup %s.orig", name)
		}
	}
	checkBackups(t, dir, orig)
}

// rerunUntilDone reruns the same command as a user would after a kill: it
// must exit 0 and finish the job; a third run must change nothing.
func rerunUntilDone(t *testing.T, dir string, orig map[string][32]byte) {
	t.Helper()
	if killed, code, stderr := edgectlRun(t, "", "patch", "layernorm", dir, "--in-place"); killed || code != 0 {
		t.Fatalf("rerun: exit %d (killed %v): %s", code, killed, stderr)
	}
	checkFinished(t, dir, orig)
	before := testmodel.TreeDigests(t, dir)
	killed, code, stderr := edgectlRun(t, "", "patch", "layernorm", dir, "--in-place")
	if killed || code != 0 || !strings.Contains(stderr, "nothing to add") {
		t.Fatalf("third run: exit %d: %s", code, stderr)
	}
	after := testmodel.TreeDigests(t, dir)
	if len(after) != len(before) {
		t.Fatalf("third run changed the directory: %d → %d files", len(before), len(after))
	}
	for name, h := range before {
		if after[name] != h {
			t.Fatalf("third run changed %s: not idempotent", name)
		}
	}
}

// kill -9 at every step of `patch layernorm --in-place` on a 3-shard
// checkpoint (EDGECTL_FAILPOINT makes the process SIGKILL itself there):
// after each, the checkpoint still loads and its backups are the
// originals; the rerun exits 0 with the job done; a third run is a no-op.
// Some cases kill the rerun too, while it finishes the interrupted switch.
func TestPatchInPlaceSurvivesKill9AtEveryStep(t *testing.T) {
	src, orig := pristine(t, testmodel.Spec{ModelType: "qwen3", Layers: 4, Shards: 3, Omit: omitNorms})
	cases := [][]string{
		{"patch.lock"},
		{"patch.stage:1"}, {"patch.stage:2"}, {"patch.stage:4"},
		{"patch.journal"},
		{"patch.backup:1"}, {"patch.rename:1"},
		{"patch.backup:2"}, {"patch.rename:2"},
		{"patch.rename:3"}, {"patch.backup:4"}, {"patch.rename:4"},
		{"patch.done"},
		{"patch.rename:2", "patch.rename:1"}, // the rerun dies finishing the switch
		{"patch.backup:3", "patch.backup:1"},
		{"patch.stage:3", "patch.stage:1"}, // rolled back, then dies staging again
	}
	for _, fps := range cases {
		t.Run(strings.Join(fps, "+"), func(t *testing.T) {
			dir := cloneDir(t, src)
			for _, fp := range fps {
				killed, code, stderr := edgectlRun(t, fp, "patch", "layernorm", dir, "--in-place")
				if !killed {
					t.Fatalf("%s: not killed there (exit %d): %s", fp, code, stderr)
				}
				// At every instant: loadable, backups intact.
				checkLoads(t, dir).Close()
				checkBackups(t, dir, orig)
			}
			rerunUntilDone(t, dir, orig)
		})
	}
}

// `patch config --in-place` switches two files under the same journal.
func TestPatchConfigInPlaceSurvivesKill9(t *testing.T) {
	src, orig := pristine(t, testmodel.Spec{Config: map[string]any{"eos_token_id": []int{1, 2}}})
	if err := os.WriteFile(filepath.Join(src, "generation_config.json"), []byte("{\"eos_token_id\": [1, 2]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	orig["generation_config.json"] = sha256.Sum256([]byte("{\"eos_token_id\": [1, 2]}\n"))
	for _, fp := range []string{"patch.stage:2", "patch.rename:1"} {
		dir := cloneDir(t, src)
		if killed, code, stderr := edgectlRun(t, fp, "patch", "config", dir, "--in-place"); !killed {
			t.Fatalf("%s: not killed (exit %d): %s", fp, code, stderr)
		}
		if killed, code, stderr := edgectlRun(t, "", "patch", "config", dir, "--in-place"); killed || code != 0 {
			t.Fatalf("%s: rerun exit %d: %s", fp, code, stderr)
		}
		for _, n := range []string{"config.json", "generation_config.json"} {
			b, _ := os.ReadFile(filepath.Join(dir, n))
			if !strings.Contains(string(b), `"eos_token_id": 2`) {
				t.Errorf("%s: %s not patched: %s", fp, n, b)
			}
			if _, err := os.Stat(filepath.Join(dir, n+".orig")); err != nil {
				t.Errorf("%s: no %s.orig", fp, n)
			}
		}
		checkBackups(t, dir, orig)
		if _, err := os.Stat(filepath.Join(dir, ".edgectl-patch.journal")); !os.IsNotExist(err) {
			t.Errorf("%s: journal left", fp)
		}
	}
}

// killPhase tells where a killed in-place patch stopped: before taking
// the directory, while staging (prepare), or while switching.
func killPhase(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, ".edgectl-patch.journal"))
	switch {
	case err != nil:
		return "before the journal"
	case strings.Contains(string(b), `"switch"`):
		return "switch"
	}
	return "prepare"
}

// kill -9 at random moments of in-place patches of a checkpoint big enough
// that the kill lands while shards are being written: same guarantees.
func TestPatchInPlaceRandomKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~50 MB per round")
	}
	src, orig := pristine(t, testmodel.Spec{ModelType: "llama", Hidden: 512, FFN: 1536, Layers: 4, Heads: 8, Shards: 3,
		DType: safetensors.F32, Omit: omitNorms})
	// How long an uninterrupted run takes on this machine (the faster of
	// two: the first also warms the page cache).
	full := time.Hour
	for range 2 {
		dir := cloneDir(t, src)
		start := time.Now()
		if killed, code, stderr := edgectlRun(t, "", "patch", "layernorm", dir, "--in-place"); killed || code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		full = min(full, time.Since(start))
		checkFinished(t, dir, orig)
		os.RemoveAll(dir)
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	// Rounds until 6 kills landed mid-run; a kill that came after the run
	// ended (the disk was faster this time) narrows the range.
	const want, maxRounds = 6, 24
	midRun, rounds := 0, 0
	phase := map[string]int{}
	for ; midRun < want && rounds < maxRounds; rounds++ {
		dir := cloneDir(t, src)
		delay := time.Duration(rng.Int64N(int64(full)))
		cmd := exec.Command(edgectlBin(t), "patch", "layernorm", dir, "--in-place")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		if signaled(cmd.Wait()) {
			midRun++
			phase[killPhase(dir)]++
		} else {
			full = max(delay, 5*time.Millisecond)
		}
		checkLoads(t, dir).Close()
		checkBackups(t, dir, orig)
		t.Run(fmt.Sprintf("round%d-%s", rounds, delay.Round(time.Millisecond)), func(t *testing.T) { rerunUntilDone(t, dir, orig) })
		os.RemoveAll(dir)
	}
	t.Logf("%d of %d kills landed mid-run; by phase: %v", midRun, rounds, phase)
	if midRun < want {
		t.Errorf("only %d of %d kills landed mid-run: the test proves little", midRun, rounds)
	}
}
