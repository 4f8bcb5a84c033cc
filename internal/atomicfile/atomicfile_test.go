package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestFileCommitReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	os.WriteFile(p, []byte("old"), 0o600)
	f, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new content"))
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatal("target changed before Commit")
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // no-op after Commit
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "new content" || st.Mode().Perm() != 0o644 {
		t.Fatalf("content %q mode %v", b, st.Mode())
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Fatalf("temp files left: %v", es)
	}
}

func TestFileAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "out.bin"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 1<<16))
	f.Abort()
	if es := entries(t, dir); len(es) != 0 {
		t.Fatalf("abort left %v", es)
	}
	if err := f.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
}

func TestDirAppearsWholeOrNotAtAll(t *testing.T) {
	parent := t.TempDir()
	target := filepath.Join(parent, "OUT")
	d, err := CreateDir(target)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.Path, "a"), []byte("1"), 0o644)
	if _, err := os.Stat(target); err == nil {
		t.Fatal("target visible before Commit")
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(target, "a")); string(b) != "1" {
		t.Fatal("committed directory lacks its file")
	}
	if _, err := CreateDir(target); err == nil {
		t.Fatal("CreateDir over an existing directory succeeded")
	}
	d2, _ := CreateDir(filepath.Join(parent, "OTHER"))
	d2.Abort()
	if es := entries(t, parent); len(es) != 1 || es[0] != "OUT" {
		t.Fatalf("aborted dir left %v", es)
	}
}
