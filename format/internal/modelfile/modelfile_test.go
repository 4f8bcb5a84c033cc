package modelfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestJoinKeepsNamesInsideTheDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, ok := range []string{"model.safetensors", "sub/model-00001-of-00002.safetensors", "a/../b.safetensors"} {
		p, err := Join(dir, ok)
		if err != nil || !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Errorf("Join(%q) = %q, %v", ok, p, err)
		}
	}
	for _, bad := range []string{"../fifo", "../../etc/passwd", "/etc/passwd", "", "a/../../x", ".."} {
		if _, err := Join(dir, bad); !errors.Is(err, ErrNotLocal) || !strings.Contains(err.Error(), dir) {
			t.Errorf("Join(%q): %v, want ErrNotLocal naming the directory", bad, err)
		}
	}
}

// openWithin fails the test if Open does not return within a second (a
// blocking open of a FIFO would hang the test forever otherwise).
func openWithin(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		f, _, err := Open(path)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("Open(%s) blocked", path)
		return nil
	}
}

func TestOpenRefusesSpecialFilesWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link-to-fifo")
	os.Symlink(fifo, link)
	for _, p := range []string{fifo, link, dir, "/dev/null"} {
		err := openWithin(t, p)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "regular file") {
			t.Errorf("Open(%s): %v", p, err)
		}
	}
	if err := openWithin(t, fifo); !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("FIFO error does not say what it is: %v", err)
	}
}

func TestOpenFollowsSymlinksToRegularFiles(t *testing.T) {
	// The Hugging Face cache layout: snapshots/REV/x -> ../../blobs/SHA.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "blobs"), 0o755)
	os.MkdirAll(filepath.Join(root, "snapshots", "rev"), 0o755)
	os.WriteFile(filepath.Join(root, "blobs", "abc"), []byte(`{"a":1}`), 0o644)
	link := filepath.Join(root, "snapshots", "rev", "config.json")
	if err := os.Symlink(filepath.Join("..", "..", "blobs", "abc"), link); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(link, 100, "a config.json")
	if err != nil || string(b) != `{"a":1}` {
		t.Fatalf("ReadFile through a cache symlink: %q %v", b, err)
	}
}

func TestReadFileLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(p, make([]byte, 101), 0o644)
	if _, err := ReadFile(p, 100, "a tokenizer.json"); err == nil || !strings.Contains(err.Error(), "101 bytes, over the 100-byte limit") {
		t.Fatalf("over the limit: %v", err)
	}
	if b, err := ReadFile(p, 101, "a tokenizer.json"); err != nil || len(b) != 101 {
		t.Fatalf("at the limit: %d %v", len(b), err)
	}
	if _, err := ReadFile(p+".missing", 100, "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}
