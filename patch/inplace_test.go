package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/pathguard"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// shardedQwen3 writes a 3-shard checkpoint lacking its norms and returns
// its directory and the SHA-256 of every file in it.
func shardedQwen3(t *testing.T) (string, map[string][32]byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "qwen3")
	if err := testmodel.Write(dir, testmodel.Spec{ModelType: "qwen3", Layers: 4, Shards: 3, Omit: omitNorms}); err != nil {
		t.Fatal(err)
	}
	return dir, testmodel.TreeDigests(t, dir)
}

// stageLayerNorm plans the norms of dir and stages them in place, stopping
// before the commit, as a process killed there would.
func stageLayerNorm(t *testing.T, dir string) *Output {
	t.Helper()
	plan, err := PlanLayerNorm(dir, LayerNormOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	out, err := NewOutput(dir, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// die models the owner process being gone: its journal stays, and it no
// longer holds the directory.
func die(o *Output) { held.Delete(absDir(o.txn.dir)) }

// checkPatched asserts the end state every in-place run must reach: it
// loads, the index lists every tensor where it is, every shard that changed
// has its original as .orig, and no working file is left.
func checkPatched(t *testing.T, dir string, orig map[string][32]byte) {
	t.Helper()
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatalf("patched checkpoint does not load: %v", err)
	}
	defer ck.Close()
	n := 0
	for _, f := range ck.Files {
		for _, tn := range f.Tensors {
			n++
			if ck.Index.WeightMap[tn.Name] != filepath.Base(f.Path) {
				t.Errorf("index maps %s to %q, it is in %s", tn.Name, ck.Index.WeightMap[tn.Name], filepath.Base(f.Path))
			}
			if _, err := f.Bytes(tn); err != nil {
				t.Errorf("%s: %v", tn.Name, err)
			}
		}
	}
	if len(ck.Index.WeightMap) != n || ck.Index.TotalSize() != ck.TensorBytes() {
		t.Errorf("index: %d entries for %d tensors, total_size %d for %d bytes", len(ck.Index.WeightMap), n, ck.Index.TotalSize(), ck.TensorBytes())
	}
	if _, ok := ck.Index.WeightMap["model.layers.3.self_attn.k_norm.weight"]; !ok {
		t.Error("norms not added")
	}
	now := testmodel.TreeDigests(t, dir)
	for name, h := range now {
		if strings.HasPrefix(name, ".") {
			t.Errorf("working file left: %s", name)
		}
		if base, ok := strings.CutSuffix(name, ".orig"); ok {
			if orig[base] != h {
				t.Errorf("%s is not the original %s", name, base)
			}
		}
	}
	for name := range orig {
		if strings.HasSuffix(name, ".safetensors") || name == safetensors.IndexName {
			if _, ok := now[name+".orig"]; !ok {
				t.Errorf("no %s.orig", name)
			}
		}
	}
}

func TestInPlaceShardedCommit(t *testing.T) {
	dir, orig := shardedQwen3(t)
	out := stageLayerNorm(t, dir)
	// Nothing switched before Commit: the checkpoint is still the original.
	for name, h := range testmodel.TreeDigests(t, dir) {
		if !strings.HasPrefix(name, ".") && orig[name] != h {
			t.Fatalf("%s changed before Commit", name)
		}
	}
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
	checkPatched(t, dir, orig)
	// Idempotent: nothing left to do, and the backups stay the originals.
	plan, err := PlanLayerNorm(dir, LayerNormOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	if plan.Changes() {
		t.Fatalf("second run would change %+v %v", plan.Adds, plan.Unindexed)
	}
}

func TestResumeRollsBackAPrepare(t *testing.T) {
	dir, orig := shardedQwen3(t)
	out := stageLayerNorm(t, dir)
	die(out)
	if _, err := PlanLayerNorm(dir, LayerNormOptions{}); err == nil || !strings.Contains(err.Error(), "was interrupted") {
		t.Fatalf("plan over a pending journal: %v", err)
	}
	r, err := Resume(dir)
	if err != nil || r == nil || r.Action != "rolled back" || len(r.Files) != 4 {
		t.Fatalf("Resume = %+v, %v", r, err)
	}
	got := testmodel.TreeDigests(t, dir)
	if len(got) != len(orig) {
		t.Fatalf("left %d files, had %d", len(got), len(orig))
	}
	for name, h := range got {
		if orig[name] != h {
			t.Fatalf("%s differs after roll back", name)
		}
	}
	if r, err := Resume(dir); r != nil || err != nil {
		t.Fatalf("second Resume = %+v, %v", r, err)
	}
}

// Every instant of the switch — journal written, k files switched, a
// backup made without its rename — rolls forward to the same end state,
// and the checkpoint loads at each of them.
func TestResumeRollsForwardFromEveryStep(t *testing.T) {
	for k := 0; k <= 4; k++ {
		for _, halfway := range []bool{false, true} {
			if k == 4 && halfway {
				continue
			}
			dir, orig := shardedQwen3(t)
			out := stageLayerNorm(t, dir)
			if err := out.txn.writeSwitchJournal(); err != nil {
				t.Fatal(err)
			}
			files := out.txn.files
			if files[3].Name != safetensors.IndexName {
				t.Fatalf("index is not switched last: %+v", files)
			}
			if err := rollForward(dir, files[:k]); err != nil {
				t.Fatal(err)
			}
			if halfway {
				if err := keepOriginal(filepath.Join(dir, files[k].Name)); err != nil {
					t.Fatal(err)
				}
			}
			die(out)
			ck, err := safetensors.OpenCheckpoint(dir)
			if err != nil {
				t.Fatalf("k=%d: does not load mid-switch: %v", k, err)
			}
			ck.Close()
			r, err := Resume(dir)
			if err != nil || r.Action != "rolled forward" {
				t.Fatalf("k=%d: Resume = %+v, %v", k, r, err)
			}
			checkPatched(t, dir, orig)
		}
	}
}

// Where hard links are impossible the original is renamed to .orig; a
// kill between that rename and the switch still rolls forward.
func TestResumeAfterRenamedBackup(t *testing.T) {
	dir, orig := shardedQwen3(t)
	out := stageLayerNorm(t, dir)
	if err := out.txn.writeSwitchJournal(); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, out.txn.files[0].Name)
	if err := os.Rename(first, first+".orig"); err != nil {
		t.Fatal(err)
	}
	die(out)
	if _, err := Resume(dir); err != nil {
		t.Fatal(err)
	}
	checkPatched(t, dir, orig)
}

func TestJournalOfALiveProcessIsRespected(t *testing.T) {
	dir, _ := shardedQwen3(t)
	j, _ := json.Marshal(journal{Version: 1, PID: os.Getppid(), State: statePrepare})
	if err := os.WriteFile(filepath.Join(dir, JournalName), j, 0o644); err != nil {
		t.Fatal(err)
	}
	var be *BusyError
	if _, err := Resume(dir); !errors.As(err, &be) || be.PID != os.Getppid() {
		t.Fatalf("Resume over a live owner: %v", err)
	}
	if _, err := NewOutput(dir, "", true); !errors.As(err, &be) {
		t.Fatalf("NewOutput over a live owner: %v", err)
	}
	if _, err := PlanConfig(dir, ConfigOptions{}); !errors.As(err, &be) {
		t.Fatalf("PlanConfig over a live owner: %v", err)
	}
	// Our own PID without our transaction is a previous incarnation (a
	// container's PID 1 run again): stale.
	j, _ = json.Marshal(journal{Version: 1, PID: os.Getpid(), State: statePrepare})
	os.WriteFile(filepath.Join(dir, JournalName), j, 0o644)
	if r, err := Resume(dir); err != nil || r.Action != "rolled back" {
		t.Fatalf("Resume of our PID's stale journal: %+v %v", r, err)
	}
	// Two transactions on one directory in one process: the second waits.
	o1, err := NewOutput(dir, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer o1.Abort()
	if _, err := NewOutput(dir, "", true); !errors.As(err, &be) {
		t.Fatalf("second in-place output: %v", err)
	}
}

func TestOutputDirNeverNestsWithTheInput(t *testing.T) {
	dir, _ := shardedQwen3(t)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(dir, alias); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{dir, alias, filepath.Join(dir, "fixed"), filepath.Join(alias, "fixed"), filepath.Dir(dir)} {
		var pe *pathguard.Error
		if _, err := NewOutput(dir, out, false); !errors.As(err, &pe) {
			t.Errorf("-o %s: %v", out, err)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 5 {
		t.Fatalf("refusals left files in the input: %d entries", len(es))
	}
}

// An -o output never copies edgectl's working files, and a killed run's
// temporary output directory is removed by the next run.
func TestOutputSkipsWorkingFilesAndCleansStale(t *testing.T) {
	dir, _ := shardedQwen3(t)
	os.WriteFile(filepath.Join(dir, ".config.json.edgectl-tmp-999999999-1"), []byte("x"), 0o644)
	parent := t.TempDir()
	stale := filepath.Join(parent, ".out.edgectl-tmp-999999999-7")
	os.MkdirAll(filepath.Join(stale, "half"), 0o755)
	plan, err := PlanLayerNorm(dir, LayerNormOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	out, err := NewOutput(dir, filepath.Join(parent, "out"), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale output of a dead process kept: %v", err)
	}
	if err := plan.Apply(out, nil); err != nil {
		t.Fatal(err)
	}
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
	var names []string
	es, _ := os.ReadDir(filepath.Join(parent, "out"))
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if strings.Contains(strings.Join(names, " "), "edgectl") || len(names) != 5 {
		t.Fatalf("output holds %v", names)
	}
}

// An index missing entries (left by an older, interrupted edgectl) is
// repaired: the plan names them and the rewritten index lists them.
func TestIndexMissingEntriesIsRepaired(t *testing.T) {
	dir, _ := shardedQwen3(t)
	applyLayerNorm(t, dir, "", LayerNormOptions{})
	ixPath := filepath.Join(dir, safetensors.IndexName)
	ix, err := safetensors.ReadIndex(ixPath)
	if err != nil {
		t.Fatal(err)
	}
	delete(ix.WeightMap, "model.norm.weight")
	delete(ix.WeightMap, "model.layers.0.input_layernorm.weight")
	b, _ := ix.Marshal()
	os.WriteFile(ixPath, b, 0o644)
	plan := applyLayerNorm(t, dir, "", LayerNormOptions{})
	if len(plan.Adds) != 0 || strings.Join(plan.Unindexed, ",") != "model.layers.0.input_layernorm.weight,model.norm.weight" {
		t.Fatalf("plan adds %v, unindexed %v", plan.Adds, plan.Unindexed)
	}
	fixed, _ := safetensors.ReadIndex(ixPath)
	if fixed.WeightMap["model.norm.weight"] == "" || fixed.WeightMap["model.layers.0.input_layernorm.weight"] == "" {
		t.Fatalf("index not repaired: %v", fixed.WeightMap)
	}
	b2, _ := os.ReadFile(ixPath + ".orig")
	if len(b2) == 0 || bytes.Contains(b2, []byte("k_norm")) {
		t.Fatal(".orig is not the first original")
	}
}
