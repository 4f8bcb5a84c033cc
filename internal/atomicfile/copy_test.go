package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Copy follows a symlinked source, creates the missing directories, and
// replaces dst by rename: a file hard-linked to the old dst (a cache entry
// sharing its inode) keeps its old bytes.
func TestCopyFollowsSymlinkAndReplacesByRename(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("weights!"), 1<<14)
	blob := filepath.Join(dir, "blobs", "abc")
	os.MkdirAll(filepath.Dir(blob), 0o755)
	if err := os.WriteFile(blob, data, 0o444); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "snapshot", "model.safetensors")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(blob, link); err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(dir, "out", "sub", "model.safetensors")
	if err := Copy(link, dst, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(dst)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
		t.Fatalf("dst %v %v: want a regular 0644 file, not a link", st.Mode(), err)
	}
	if b, _ := os.ReadFile(dst); !bytes.Equal(b, data) {
		t.Fatalf("copied %d bytes, want the source's %d", len(b), len(data))
	}

	shared := filepath.Join(dir, "cache-entry")
	if err := os.Link(dst, shared); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(blob+"2", []byte("new"), 0o644)
	if err := Copy(blob+"2", dst, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "new" {
		t.Errorf("dst holds %q after the second copy", b)
	}
	if b, _ := os.ReadFile(shared); !bytes.Equal(b, data) {
		t.Error("the copy wrote through the old inode: a hard-linked cache entry changed")
	}
	if es := entries(t, filepath.Join(dir, "out", "sub")); len(es) != 1 {
		t.Errorf("left beside dst: %v", es)
	}
}

// A copy that cannot finish leaves dst as it was and no temporary.
func TestCopyFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "config.json")
	os.WriteFile(dst, []byte("old"), 0o644)
	// Reading a directory fails after dst's temporary exists.
	err := Copy(dir, dst, 0o644)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("err = %v, want one naming the source", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "old" {
		t.Errorf("dst = %q after a failed copy", b)
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Errorf("left behind: %v", es)
	}
	if err := Copy(filepath.Join(dir, "missing"), filepath.Join(dir, "x"), 0o644); !os.IsNotExist(err) {
		t.Errorf("missing source: err = %v", err)
	}
}
