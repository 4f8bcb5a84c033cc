package hub

import (
	"github.com/edgectl/edgectl/internal/testbin"

	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/hub/hubtest"
)

// TestMain removes the fake programs built for the package's tests.
func TestMain(m *testing.M) { testbin.Main(m) }

// TestKill9Resume kills a real pulling process mid-body, pulls again, and
// checks that only the missing bytes crossed the network and that the blob's
// sha256 is right.
func TestKill9Resume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := testbin.Build(t, "github.com/edgectl/edgectl/hub/testdata/pullcmd", "pullcmd")

	srv := hubtest.New()
	defer srv.Close()
	const size = 8<<20 + 4321
	weights := hubtest.Generated(42, size)
	srv.AddRepo("acme/big", &hubtest.File{Path: "model.safetensors", Content: weights, LFS: true},
		&hubtest.File{Path: "config.json", Content: hubtest.Bytes([]byte("{}"))})
	srv.SetFaults("model.safetensors", hubtest.Faults{BytesPerSec: 4 << 20})
	cache := t.TempDir()
	env := append(os.Environ(), "HF_ENDPOINT="+srv.URL(), "HF_HUB_CACHE="+cache, "HF_HOME="+t.TempDir(), "HF_TOKEN=", "HF_HUB_OFFLINE=")

	cmd := exec.Command(bin, "acme/big")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for srv.Served("model.safetensors") < 3<<20 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("download did not start: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("pull was not killed (err %v): it finished too early to test resuming", err)
	}
	sum := sha256Hex(contentBytes(t, weights))
	inc := filepath.Join(cache, "models--acme--big", "blobs", sum+".incomplete")
	fi, err := os.Stat(inc)
	if err != nil {
		t.Fatalf("no .incomplete blob after the kill: %v", err)
	}
	kept := fi.Size()
	if kept == 0 || kept >= size {
		t.Fatalf(".incomplete holds %d of %d bytes", kept, size)
	}

	srv.SetFaults("model.safetensors", hubtest.Faults{})
	srv.ResetLog()
	cmd = exec.Command(bin, "acme/big")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("second pull: %v\n%s", err, out)
	}
	again := srv.Served("model.safetensors")
	if again != size-kept {
		t.Errorf("second pull downloaded %d bytes, want the %d missing", again, size-kept)
	}
	if got := hfRead(t, cache, "acme/big", "main", "model.safetensors"); sha256Hex(got) != sum {
		t.Errorf("sha256 after resume %s, want %s", sha256Hex(got), sum)
	}
	assertNoIncomplete(t, cache)
	t.Logf("killed after %d bytes on disk; resume re-downloaded %d of %d bytes (%.1f%%)", kept, again, size, 100*float64(again)/size)
}
