// Package testbin builds the small programs tests run as real subprocesses —
// fake vendor CLIs, a fake container runtime, a command to kill -9 — once
// per test process, and returns their paths. Programs are named by import
// path (github.com/edgectl/edgectl/pulsar2/testdata/fakedocker), so any
// package's tests can use any fake.
package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/edgectl/edgectl/internal/envconfig"
)

// tmpRoot is the temp directory when the test process started: a test
// that points TMPDIR at its own t.TempDir() must not take the shared
// binaries with it when it ends.
var tmpRoot = os.TempDir()

var (
	mu    sync.Mutex
	dir   string
	built = map[string]*result{}
)

type result struct {
	once sync.Once
	path string
	err  error
}

// Build compiles the main package at importPath (CGO_ENABLED=0) into a
// file called name and returns its path; later calls with the same
// arguments return the same binary.
func Build(t testing.TB, importPath, name string) string {
	t.Helper()
	mu.Lock()
	if dir == "" {
		d, err := os.MkdirTemp(tmpRoot, "edgectl-testbin-")
		if err != nil {
			mu.Unlock()
			t.Fatal(err)
		}
		dir = d
	}
	key := importPath + "\x00" + name
	r := built[key]
	if r == nil {
		r = &result{}
		built[key] = r
	}
	base := dir
	mu.Unlock()
	r.once.Do(func() {
		sum := sha256.Sum256([]byte(key))
		out := filepath.Join(base, hex.EncodeToString(sum[:6]), name)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			r.err = err
			return
		}
		cmd := exec.Command("go", "build", "-o", out, importPath)
		cmd.Env = envconfig.ChildEnv("CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			r.err = fmt.Errorf("go build %s: %v\n%s", importPath, err, b)
			return
		}
		r.path = out
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.path
}

// Dir builds every program of bins (file name → import path) and links
// them into a new temporary directory, ready to be put first on PATH.
func Dir(t testing.TB, bins map[string]string) string {
	t.Helper()
	d := t.TempDir()
	for name, pkg := range bins {
		if err := os.Symlink(Build(t, pkg, name), filepath.Join(d, name)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// Import paths of the fakes the tests share.
const (
	FakeAxllm  = "github.com/edgectl/edgectl/engine/axcl/testdata/fakeaxllm"
	FakeDocker = "github.com/edgectl/edgectl/pulsar2/testdata/fakedocker"
	// FakeRKNNHelper speaks engine/rknnrt's helper protocol.
	FakeRKNNHelper = "github.com/edgectl/edgectl/internal/testbin/testdata/fakerknnhelper"
	// FakeRKNN is rknn-toolkit2: a container runtime as docker/podman, an installed toolkit as python3.
	FakeRKNN = "github.com/edgectl/edgectl/internal/testbin/testdata/fakerknn"
)

// Main is a TestMain for packages that use Build: it runs the tests and
// removes what they built, so test runs leave nothing in the temp dir.
func Main(m *testing.M) {
	// Nothing a test (or a program it starts) does may write into the
	// user's own cache: the Hub cache, prep's step cache and the vendor
	// lane's PID files all default under XDG_CACHE_HOME.
	// A test binary a test runs as a child (and may kill) shares its
	// parent's directory instead of making one it cannot remove.
	const mark = "edgectl-test-cache-"
	var cache string
	if !strings.Contains(envconfig.XDGCacheHome.Get(), mark) {
		if d, err := os.MkdirTemp("", mark); err == nil {
			cache = d
			os.Setenv("XDG_CACHE_HOME", cache)
		}
	}
	code := m.Run()
	Cleanup()
	if cache != "" {
		os.RemoveAll(cache)
	}
	os.Exit(code)
}

// Cleanup removes every binary built so far; call it from TestMain after
// m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
		built = map[string]*result{}
	}
}
