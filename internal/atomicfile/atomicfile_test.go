package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// A device, FIFO or directory at the target is refused before anything is
// written: the rename would replace the node itself.
func TestCreateRefusesSpecialTargets(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	for path, want := range map[string]string{fifo: "named pipe", "/dev/null": "device", sub: "directory"} {
		f, err := Create(path, 0o644)
		if err == nil {
			f.Abort()
			t.Fatalf("%s: no error", path)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", path, err)
		}
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatal("the FIFO was replaced")
	}
	if es := entries(t, dir); len(es) != 2 {
		t.Fatalf("left %v", es)
	}
	// A symlink is replaced by the file; what it pointed to is untouched.
	target := filepath.Join(dir, "blob")
	os.WriteFile(target, []byte("shared"), 0o644)
	link := filepath.Join(dir, "config.json")
	os.Symlink(target, link)
	if err := WriteFile(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "shared" {
		t.Fatal("the symlink's target changed")
	}
}
