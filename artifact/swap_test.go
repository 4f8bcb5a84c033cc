package artifact

import (
	"os"
	"path/filepath"
	"testing"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Replacing an OUT swaps whole directories: afterwards only the new one
// exists, and nothing of the old one lingers under any name.
func TestSwapDirLeavesOnlyTheNewDirectory(t *testing.T) {
	tmp := t.TempDir()
	target := filepath.Join(tmp, "OUT")
	must(t, os.MkdirAll(target, 0o755))
	must(t, os.WriteFile(filepath.Join(target, "old.bin"), []byte("old"), 0o644))
	ready, err := NewTempDir(tmp, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(ready, "new.bin"), []byte("new"), 0o644))
	must(t, SwapDir(ready, target))
	if b, err := os.ReadFile(filepath.Join(target, "new.bin")); err != nil || string(b) != "new" {
		t.Errorf("new.bin: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(target, "old.bin")); !os.IsNotExist(err) {
		t.Error("old and new files mixed")
	}
	if es, _ := os.ReadDir(tmp); len(es) != 1 {
		t.Errorf("%d entries beside OUT, want OUT alone", len(es))
	}
}

// With nothing at the target the ready directory is simply renamed.
func TestSwapDirIntoEmptyPlace(t *testing.T) {
	tmp := t.TempDir()
	ready, err := NewTempDir(tmp, "OUT")
	must(t, err)
	if st, _ := os.Stat(ready); st.Mode().Perm() != 0o755 {
		t.Errorf("temp dir mode %v, want 0755", st.Mode().Perm())
	}
	target := filepath.Join(tmp, "OUT")
	must(t, SwapDir(ready, target))
	if es, _ := os.ReadDir(tmp); len(es) != 1 || es[0].Name() != "OUT" {
		t.Errorf("entries %v, want OUT alone", es)
	}
	if n := TempName(tmp, "OUT"); filepath.Dir(n) != tmp || n == TempName(tmp, "OUT") {
		t.Errorf("TempName %s is not a fresh name in %s", n, tmp)
	}
}
