package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/testbin"
)

// `quant pack -o` by the output-path rules (docs/output-paths.md): a
// symlink is written through, a device node and a FIFO are streamed into
// and stay what they are, - is stdout, a directory is a usage error.
func TestQuantPackOutputPaths(t *testing.T) {
	in := bitnetCheckpoint(t)
	ref := filepath.Join(t.TempDir(), "ref.gguf")
	if code, _, stderr := runCLI(t, "quant", "pack", in, "-o", ref, "--format", "f16"); code != 0 {
		t.Fatalf("reference pack: exit %d: %s", code, stderr)
	}
	want, _ := os.ReadFile(ref)
	pack := func(out string, extra ...string) (int, string, string) {
		return runCLI(t, append([]string{"quant", "pack", in, "-o", out, "--format", "f16"}, extra...)...)
	}

	t.Run("symlink", func(t *testing.T) {
		dir := t.TempDir()
		real := filepath.Join(dir, "real.gguf")
		os.WriteFile(real, []byte("old"), 0o644)
		link := filepath.Join(dir, "link.gguf")
		os.Symlink(real, link)
		if code, _, stderr := pack(link); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if got, _ := os.ReadFile(real); !bytes.Equal(got, want) {
			t.Fatalf("the symlink's target has %d bytes, want the %d-byte model", len(got), len(want))
		}
		if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
			t.Fatal("the symlink was replaced by a file")
		}
	})

	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "pipe")
		read := testbin.FIFO(t, fifo)
		if code, _, stderr := pack(fifo); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if b := read(20 * time.Second); !bytes.Equal(b, want) {
			t.Fatalf("the FIFO's reader got %d bytes, want %d", len(b), len(want))
		}
		if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
			t.Fatal("the FIFO was replaced")
		}
	})

	t.Run("device", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mknod needs root: run the tests as root (e.g. in a container) to cover a device node")
		}
		dir := t.TempDir()
		null, full := filepath.Join(dir, "null"), filepath.Join(dir, "full")
		// A private /dev/null (1,3) and /dev/full (1,7): the tests never touch the system's.
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Skip("mknod:", err)
		}
		syscall.Mknod(full, syscall.S_IFCHR|0o666, 1<<8|7)
		code, _, stderr := pack(null)
		if code != 0 {
			t.Fatalf("-o NULL-DEVICE: exit %d: %s", code, stderr)
		}
		code, _, stderr = pack(full)
		if code != exitError || !strings.Contains(lastLine(stderr), "no space left on device") {
			t.Fatalf("-o FULL-DEVICE: exit %d: %q", code, stderr)
		}
		t.Logf("-o FULL-DEVICE: exit %d: %s", code, lastLine(stderr))
		for _, p := range []string{null, full} {
			if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeCharDevice == 0 {
				t.Fatalf("%s is no longer a character device", p)
			}
		}
		if left := temporaries(t, dir); len(left) != 0 {
			t.Fatalf("temporaries left beside the device: %v", left)
		}
	})

	t.Run("stdout", func(t *testing.T) {
		code, stdout, stderr := pack("-")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if stdout != string(want) {
			t.Fatalf("stdout has %d bytes, want the %d-byte model (and nothing else)", len(stdout), len(want))
		}
		if !strings.Contains(stderr, "wrote -") {
			t.Fatalf("the summary should go to stderr: %q", stderr)
		}
		if code, _, stderr := runCLI(t, "--json", "quant", "pack", in, "-o", "-", "--format", "f16"); code != exitUsage {
			t.Fatalf("-o - with --json: exit %d: %s", code, stderr)
		}
		if code, _, stderr := runCLI(t, "quant", "pack", in, "-o", "-", "--format", "gptq-int4"); code != exitUsage || !strings.Contains(stderr, "cannot be streamed") {
			t.Fatalf("gptq-int4 -o -: exit %d: %s", code, stderr)
		}
	})

	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		code, _, stderr := pack(dir)
		if code != exitUsage || !strings.Contains(stderr, "is a directory") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Fatalf("-o DIR: exit %d: %q", code, stderr)
		}
		if es, _ := os.ReadDir(dir); len(es) != 0 {
			t.Fatalf("wrote into the directory: %v", es)
		}
	})
}

// The system's /dev/null as -o, as people time a command: streamed into,
// still the same device afterwards (as root a rename would have replaced
// it for the whole machine).
func TestQuantPackToDevNull(t *testing.T) {
	before, err := os.Lstat("/dev/null")
	if err != nil {
		t.Skip("no /dev/null")
	}
	in := bitnetCheckpoint(t)
	var out, errOut bytes.Buffer
	code := run(context.Background(), &cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		[]string{"quant", "pack", in, "-o", "/dev/null", "--format", "sherry"})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	after, err := os.Lstat("/dev/null")
	if err != nil || !os.SameFile(before, after) || after.Mode()&os.ModeCharDevice == 0 {
		t.Fatal("/dev/null was replaced")
	}
	if _, err := os.Lstat("/dev/null.htok"); err == nil {
		t.Fatal("a .htok sidecar was written into /dev")
	}
	if !strings.Contains(errOut.String(), "no .htok sidecar") {
		t.Errorf("no warning about the skipped sidecar: %s", errOut.String())
	}
}
