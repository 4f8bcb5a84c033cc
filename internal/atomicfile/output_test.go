package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/testbin"
)

func writeOutput(t *testing.T, path string, data []byte, stdout io.Writer) (*Output, error) {
	t.Helper()
	o, err := CreateOutput(path, 0o644, stdout)
	if err != nil {
		return nil, err
	}
	defer o.Abort()
	if _, err := o.Write(data); err != nil {
		return o, err
	}
	return o, o.Commit()
}

func TestOutputRegularFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	os.WriteFile(p, []byte("old"), 0o600)
	o, err := writeOutput(t, p, []byte("new bytes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new bytes" || o.Streaming || o.Written() != 9 {
		t.Fatalf("content %q streaming %v written %d", b, o.Streaming, o.Written())
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Fatalf("left %v", es)
	}
}

// A symlink's target gets the bytes and the link stays a link; a dangling
// link gets its target created.
func TestOutputWritesThroughSymlinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.gguf")
	os.WriteFile(real, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.gguf")
	if err := os.Symlink("real.gguf", link); err != nil {
		t.Fatal(err)
	}
	o, err := writeOutput(t, link, []byte("through"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(real); string(b) != "through" || o.Target != real {
		t.Fatalf("target has %q (Target %s)", b, o.Target)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
	dangling := filepath.Join(dir, "dangling.gguf")
	os.Symlink(filepath.Join(dir, "new.gguf"), dangling)
	if _, err := writeOutput(t, dangling, []byte("made"), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new.gguf")); string(b) != "made" {
		t.Fatalf("dangling link's target has %q", b)
	}
	if st, _ := os.Lstat(dangling); st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the dangling symlink was replaced")
	}
}

// A FIFO with a reader gets the bytes; it stays a FIFO and nothing is
// left beside it.
func TestOutputStreamsIntoAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	read := testbin.FIFO(t, fifo)
	data := bytes.Repeat([]byte("x"), 1<<20) // more than a pipe buffer
	o, err := writeOutput(t, fifo, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := read(10 * time.Second); !bytes.Equal(b, data) || !o.Streaming {
		t.Fatalf("reader got %d bytes, streaming %v", len(b), o.Streaming)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatal("the FIFO was replaced")
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Fatalf("left %v", es)
	}
}

// A character device made with mknod (a private /dev/null and /dev/full)
// stays a device: /dev/null takes the bytes, /dev/full fails cleanly.
func TestOutputStreamsIntoACharacterDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root: run as root (e.g. in a container) to test a device node")
	}
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	full := filepath.Join(dir, "full")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(mkdev(1, 3))); err != nil {
		t.Skip("mknod (no CAP_MKNOD here?):", err)
	}
	if err := syscall.Mknod(full, syscall.S_IFCHR|0o666, int(mkdev(1, 7))); err != nil {
		t.Skip("mknod:", err)
	}
	o, err := writeOutput(t, null, bytes.Repeat([]byte("y"), 1<<20), nil)
	if err != nil {
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			t.Skip("device nodes cannot be opened here (nodev mount):", err)
		}
		t.Fatal(err)
	}
	if !o.Streaming || o.Written() != 1<<20 {
		t.Fatalf("streaming %v written %d", o.Streaming, o.Written())
	}
	_, err = writeOutput(t, full, []byte("z"), nil)
	if err == nil || !errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("write to a full device: %v", err)
	}
	for _, p := range []string{null, full} {
		if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("%s is no longer a character device", p)
		}
	}
	if es := entries(t, dir); len(es) != 2 {
		t.Fatalf("left %v", es)
	}
}

func mkdev(major, minor uint64) uint64 {
	return (major&0xfff)<<8 | (minor & 0xff) | (major&^0xfff)<<32 | (minor&^0xff)<<12
}

// The system's /dev/null, which every user may write: streamed, never
// replaced (as root, a rename would have swapped it for a file).
func TestOutputDevNull(t *testing.T) {
	before, err := os.Lstat("/dev/null")
	if err != nil {
		t.Skip("no /dev/null:", err)
	}
	o, err := writeOutput(t, "/dev/null", []byte("gone"), nil)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Lstat("/dev/null")
	if !o.Streaming || !os.SameFile(before, after) || after.Mode()&os.ModeCharDevice == 0 {
		t.Fatal("/dev/null was replaced")
	}
}

func TestOutputDashIsStdout(t *testing.T) {
	var buf bytes.Buffer
	o, err := writeOutput(t, "-", []byte("to stdout"), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != "to stdout" || !o.Streaming || o.Target != "stdout" {
		t.Fatalf("stdout got %q", buf.String())
	}
}

// A directory, a socket: refused with one line, a usage error, nothing
// written.
func TestOutputRefusesDirectoriesAndSockets(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "models")
	os.Mkdir(sub, 0o755)
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skip("unix socket:", err)
	}
	defer l.Close()
	for path, want := range map[string]string{sub: "is a directory", sock: "is a socket"} {
		o, err := CreateOutput(path, 0o644, nil)
		if err == nil {
			o.Abort()
			t.Fatalf("%s: no error", path)
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") || errkind.Of(err) != errkind.Usage {
			t.Errorf("%s: %v (kind %v)", path, err, errkind.Of(err))
		}
	}
	if es := entries(t, sub); len(es) != 0 {
		t.Fatalf("wrote into the directory: %v", es)
	}
}

// A directory output onto a device names what is there and never advises
// removing it.
func TestCreateDirOnADevice(t *testing.T) {
	_, err := CreateDir("/dev/null")
	if err == nil || !strings.Contains(err.Error(), "a device") || strings.Contains(err.Error(), "remove") {
		t.Fatalf("CreateDir(/dev/null): %v", err)
	}
}
