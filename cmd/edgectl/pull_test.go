package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	goio "io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/cli"
)

// pullEnv starts a fake Hub with one small model and points the Hub
// environment at it and at a fresh cache.
func pullEnv(t *testing.T) (*hubtest.Server, string, string) {
	t.Helper()
	srv := hubtest.New()
	t.Cleanup(srv.Close)
	_, commit := srv.AddRepo("acme/tiny",
		&hubtest.File{Path: "config.json", Content: hubtest.Bytes([]byte(`{"hidden_size":8}`))},
		&hubtest.File{Path: "model.safetensors", Content: hubtest.Generated(3, 1<<20+5), LFS: true})
	return srv, hubEnv(t, srv.URL()), commit
}

// hubEnv points the Hub environment at endpoint, with no token, online,
// and a fresh HF_HOME and cache; it returns the cache.
func hubEnv(t *testing.T, endpoint string) (cache string) {
	cache = t.TempDir()
	t.Setenv("HF_ENDPOINT", endpoint)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	return cache
}

func TestPullJSONEvents(t *testing.T) {
	_, cache, commit := pullEnv(t)
	code, out, stderr := runCLI(t, "pull", "--json", "acme/tiny@main")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	kinds := map[string]int{}
	var done struct {
		Event      string `json:"event"`
		Commit     string `json:"commit"`
		Dir        string `json:"dir"`
		Downloaded int64  `json:"downloaded"`
		Files      []struct {
			Path   string `json:"path"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		kinds[ev["event"].(string)]++
		if ev["event"] == "done" {
			json.Unmarshal(sc.Bytes(), &done)
		}
	}
	if kinds["start"] != 1 || kinds["file_done"] != 2 || kinds["done"] != 1 {
		t.Errorf("events %v", kinds)
	}
	if done.Commit != commit || done.Dir != filepath.Join(cache, "models--acme--tiny", "snapshots", commit) || done.Downloaded != 1<<20+5+17 || len(done.Files) != 2 {
		t.Errorf("done event %+v", done)
	}
}

func TestPullPrintsSnapshotDir(t *testing.T) {
	srv, cache, commit := pullEnv(t)
	code, out, stderr := runCLI(t, "pull", "acme/tiny", "--include", "*.json")
	want := filepath.Join(cache, "models--acme--tiny", "snapshots", commit)
	if code != 0 || out != want+"\n" || !strings.Contains(stderr, "acme/tiny@main → commit "+commit[:12]) {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, stderr)
	}
	if srv.Served("model.safetensors") != 0 {
		t.Error("--include *.json downloaded the weights")
	}
	// Again: everything from the cache.
	code, _, stderr = runCLI(t, "pull", "acme/tiny", "--include", "*.json")
	if code != 0 || !strings.Contains(stderr, "0 B downloaded, 1 of 1 files from the cache") {
		t.Errorf("second pull: exit %d %q", code, stderr)
	}
}

func TestPullLocalDir(t *testing.T) {
	pullEnv(t)
	dir := filepath.Join(t.TempDir(), "tiny")
	code, out, stderr := runCLI(t, "pull", "acme/tiny", "--local-dir", dir, "-j", "1")
	if code != 0 || out != dir+"\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, stderr)
	}
	fi, err := os.Lstat(filepath.Join(dir, "model.safetensors"))
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 1<<20+5 {
		t.Errorf("local file: %v %v", fi, err)
	}
}

func TestPullExitCodes(t *testing.T) {
	srv, _, _ := pullEnv(t)
	srv.AddRepo("meta/gated", &hubtest.File{Path: "config.json", Content: hubtest.Bytes([]byte("{}"))})
	srv.SetGated("meta/gated", true)

	cases := []struct {
		args []string
		env  map[string]string
		code int
		msg  string
	}{
		{[]string{"pull", "acme/missing"}, nil, exitNotFound, "repository acme/missing not found"},
		{[]string{"pull", "acme/tiny@v7"}, nil, exitNotFound, `revision "v7" not found`},
		{[]string{"pull", "meta/gated"}, nil, exitAuth, "accept its licence"},
		{[]string{"pull", "meta/gated", "--token", "hf_wrong"}, nil, exitAuth, "not been granted access"},
		{[]string{"pull", "acme/tiny"}, map[string]string{"HF_HUB_OFFLINE": "1"}, exitOffline, "not in the cache"},
		{[]string{"pull", "acme/tiny", "--include", "*.gguf"}, nil, exitNotFound, "no file of acme/tiny@main matches --include *.gguf"},
		{[]string{"pull", "https://huggingface.co/acme/tiny"}, nil, exitUsage, "ORG/NAME[@REVISION]"},
		{[]string{"pull", "acme/tiny@"}, nil, exitUsage, "ORG/NAME[@REVISION]"},
		{[]string{"pull", "acme/tiny", "--jobs", "0"}, nil, exitUsage, `"0" for "-j, --jobs" flag: out of range; want [1, 64]`},
		{[]string{"pull", "../../etc"}, nil, exitUsage, "is not a Hub model id"},
	}
	for _, tc := range cases {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		code, out, stderr := runCLI(t, tc.args...)
		if code != tc.code || out != "" || !strings.HasPrefix(stderr, "edgectl: ") || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d (want %d) stdout %q stderr %q", tc.args, code, tc.code, out, stderr)
		}
		for k := range tc.env {
			t.Setenv(k, "")
		}
	}
	// The right token opens the gated repo.
	if code, _, stderr := runCLI(t, "pull", "meta/gated", "--token", srv.Token); code != 0 {
		t.Errorf("granted token: exit %d %s", code, stderr)
	}
}

func TestPullHandsOCIRefsToTheOCIPuller(t *testing.T) {
	pullEnv(t)
	var gotRef, gotDir string
	prev := pullOCI
	pullOCI = func(ctx context.Context, io *cli.IO, ref, localDir string) error {
		gotRef, gotDir = ref, localDir
		return nil
	}
	t.Cleanup(func() { pullOCI = prev })
	if code, _, stderr := runCLI(t, "pull", "oci://reg/m:v1", "--local-dir", "/tmp/x"); code != 0 || gotRef != "oci://reg/m:v1" || gotDir != "/tmp/x" {
		t.Errorf("exit %d %q: got %q %q", code, stderr, gotRef, gotDir)
	}
}

func TestPullInterruptedKeepsPartialDownload(t *testing.T) {
	srv, cache, _ := pullEnv(t)
	srv.SetFaults("model.safetensors", hubtest.Faults{BytesPerSec: 1 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for srv.Served("model.safetensors") < 256<<10 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	var out, errOut bytes.Buffer
	code := run(ctx, &cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"pull", "acme/tiny"})
	if code != exitError || !strings.Contains(errOut.String(), "interrupted: partial downloads are kept, run the same command again to resume") {
		t.Fatalf("exit %d stderr %q", code, errOut.String())
	}
	incs, _ := filepath.Glob(filepath.Join(cache, "models--acme--tiny", "blobs", "*.incomplete"))
	if len(incs) != 1 {
		t.Fatalf("partial downloads kept: %v", incs)
	}
	if fi, err := os.Stat(incs[0]); err != nil || fi.Size() == 0 {
		t.Errorf("empty .incomplete: %v", err)
	}
}

// On a terminal, pull draws one progress bar on stderr and keeps stdout for
// the snapshot path.
func TestPullDrawsProgressOnATerminal(t *testing.T) {
	srv, _, _ := pullEnv(t)
	srv.SetFaults("model.safetensors", hubtest.Faults{BytesPerSec: 4 << 20})
	t.Setenv("CI", "")
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	drawn := make(chan string)
	go func() {
		b, _ := goio.ReadAll(ptmx)
		drawn <- string(b)
	}()
	var out bytes.Buffer
	code := run(context.Background(), &cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: tty}, []string{"pull", "acme/tiny"})
	tty.Close()
	screen := <-drawn
	if code != 0 || !strings.HasSuffix(out.String(), "\n") || strings.Contains(out.String(), "%") {
		t.Fatalf("exit %d stdout %q", code, out.String())
	}
	if !strings.Contains(screen, "acme/tiny (2 files)") || !strings.Contains(screen, "%") {
		t.Errorf("no progress bar on the terminal: %q", screen)
	}
}
