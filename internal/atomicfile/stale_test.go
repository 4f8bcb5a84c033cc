package atomicfile

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/testbin"
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
	deadPID := strconv.Itoa(testbin.DeadPID(t))
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

// With names, CleanStale removes only the orphans of those outputs: a
// command cleans up after its own killed runs.
func TestCleanStaleByName(t *testing.T) {
	dir := t.TempDir()
	dead := testbin.DeadPID(t)
	pid := strconv.Itoa(dead)
	mine := filepath.Join(dir, ".m.gguf.edgectl-tmp-"+pid+"-1")
	htok := filepath.Join(dir, ".m.htok.edgectl-tmp-"+pid+"-2")
	other := filepath.Join(dir, ".other.gguf.edgectl-tmp-"+pid+"-3")
	for _, p := range []string{mine, htok, other} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := CleanStale(dir, "m.gguf", "m.htok")
	if err != nil || len(removed) != 2 {
		t.Fatalf("removed %v, %v; want the two of m.*", removed, err)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Fatalf("another output's orphan was removed: %v", err)
	}
	for name, want := range map[string]string{
		filepath.Base(other):                      "other.gguf",
		"..edgectl-patch.journal.edgectl-tmp-9-1": ".edgectl-patch.journal",
	} {
		if base, ok := TempOf(name); !ok || base != want {
			t.Errorf("TempOf(%q) = %q, %v; want %q", name, base, ok, want)
		}
	}
	if !OwnerAlive(os.Getpid()) || OwnerAlive(dead) {
		t.Errorf("OwnerAlive: self %v, dead child %v", OwnerAlive(os.Getpid()), OwnerAlive(dead))
	}
}

// A temporary with this process's PID that predates the process was left
// by an earlier process with the same PID (a container's PID 1): stale.
func TestCleanStaleOwnPIDFromAnEarlierProcess(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, ".m.gguf.edgectl-tmp-"+strconv.Itoa(os.Getpid())+"-1")
	if err := os.WriteFile(old, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := started.Add(-time.Minute)
	if err := os.Chtimes(old, before, before); err != nil {
		t.Fatal(err)
	}
	mine, err := Create(filepath.Join(dir, "m.gguf"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Abort()
	removed, err := CleanStale(dir, "m.gguf")
	if err != nil || len(removed) != 1 || removed[0] != old {
		t.Fatalf("removed %v, %v; want only %s", removed, err, old)
	}
	if _, err := os.Stat(mine.Name()); err != nil {
		t.Fatalf("this process's temporary was removed: %v", err)
	}
}
