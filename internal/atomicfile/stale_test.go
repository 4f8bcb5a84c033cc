package atomicfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestTempNamesCarryOwnerPID(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "model.gguf"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	pid, ok := IsTemp(filepath.Base(f.Name()))
	if !ok || pid != os.Getpid() {
		t.Fatalf("temp %s: pid %d ok %v", f.Name(), pid, ok)
	}
	for _, name := range []string{"model.gguf", ".model.gguf.tmp-123", ".x.edgectl-tmp--1", ".x.edgectl-tmp-abc-1", "x.edgectl-tmp-12-1"} {
		if _, ok := IsTemp(name); ok {
			t.Errorf("%q taken for a temporary", name)
		}
	}
}

// A temporary whose owner was killed is removed; one of a live process, of
// this process, and ordinary files stay.
func TestCleanStaleRemovesOnlyOrphans(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	deadPID := strconv.Itoa(dead.ProcessState.Pid())
	orphanFile := filepath.Join(dir, ".out.gguf.edgectl-tmp-"+deadPID+"-111")
	orphanDir := filepath.Join(dir, ".OUT.edgectl-tmp-"+deadPID+"-222")
	liveFile := filepath.Join(dir, ".out.gguf.edgectl-tmp-"+strconv.Itoa(os.Getppid())+"-333")
	os.WriteFile(orphanFile, []byte("partial"), 0o644)
	os.MkdirAll(filepath.Join(orphanDir, "sub"), 0o755)
	os.WriteFile(liveFile, []byte("in progress"), 0o644)
	mine, err := Create(filepath.Join(dir, "mine.bin"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Abort()
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("weights"), 0o644)

	removed, err := CleanStale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Fatalf("removed %v, want the two orphans", removed)
	}
	for _, p := range []string{orphanFile, orphanDir} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there", p)
		}
	}
	for _, p := range []string{liveFile, mine.Name(), filepath.Join(dir, "model.safetensors")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if r, err := CleanStale(filepath.Join(dir, "missing")); err != nil || r != nil {
		t.Fatalf("missing dir: %v %v", r, err)
	}
}
