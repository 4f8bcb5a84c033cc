package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestRemove(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "model")
	os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
	os.WriteFile(filepath.Join(tree, "sub", "w.bin"), []byte("weights"), 0o644)
	// A killed earlier Remove of the same name left its temporary.
	stale := filepath.Join(dir, ".model.edgectl-tmp-999999999-old")
	os.Mkdir(stale, 0o755)
	// Another directory, aside: a link to it is removed, not followed.
	target := filepath.Join(t.TempDir(), "kept")
	os.Mkdir(target, 0o755)
	os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(dir, "aside")
	os.Mkdir(aside, 0o755)

	if err := Remove(tree, ""); err != nil {
		t.Fatal(err)
	}
	if err := Remove(link, aside); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "aside" {
		t.Errorf("left in the directory: %v", ents)
	}
	if ents, _ := os.ReadDir(aside); len(ents) != 0 {
		t.Errorf("left aside: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(target, "f")); err != nil {
		t.Errorf("the link's target lost a file: %v", err)
	}
	if err := Remove(tree, ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removing it again: %v, want not exist", err)
	}
}
