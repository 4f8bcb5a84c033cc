package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/progress"
)

const prepFixture = "../../testdata/models/tinystories-656k"

// jsonEvents parses stdout as JSON lines, failing on anything else.
func jsonEvents(t *testing.T, stdout string) []progress.Event {
	t.Helper()
	var evs []progress.Event
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var e progress.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("stdout line %q is not JSON: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

func TestPrepPushPullCommands(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no developer credentials
	tmp := t.TempDir()
	out := filepath.Join(tmp, "OUT")

	code, stdout, stderr := runCLI(t, "prep", prepFixture, "--target", "cpu", "-o", out,
		"--cache-dir", filepath.Join(tmp, "cache"), "--push", host+"/models/tiny:v1", "--json")
	if code != 0 {
		t.Fatalf("prep: exit %d: %s", code, stderr)
	}
	evs := jsonEvents(t, stdout)
	last := evs[len(evs)-1]
	if last.Event != "result" || last.Out != out || !strings.HasPrefix(last.Ref, host+"/models/tiny@sha256:") || last.Files != 6 {
		t.Fatalf("result event %+v", last)
	}
	var pushed bool
	for _, e := range evs {
		pushed = pushed || (e.Event == "done" && e.Step == "push" && e.Digest == last.Digest)
	}
	if !pushed {
		t.Error("no push done event")
	}

	// edgectl push prints the digest reference; identical content, same digest.
	code, stdout, stderr = runCLI(t, "push", out, host+"/models/tiny:again")
	if code != 0 || strings.TrimSpace(stdout) != last.Ref {
		t.Fatalf("push: exit %d stdout %q stderr %q, want %s", code, stdout, stderr, last.Ref)
	}

	// A device pulls by digest into the directory serve --models reads.
	dev := filepath.Join(tmp, "models", "tiny")
	code, stdout, stderr = runCLI(t, "pull", "oci://"+last.Ref, "--local-dir", dev)
	if code != 0 || strings.TrimSpace(stdout) != dev {
		t.Fatalf("pull: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json", "manifest.json"} {
		a, _ := os.ReadFile(filepath.Join(out, name))
		b, err := os.ReadFile(filepath.Join(dev, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs after the round trip (%v)", name, err)
		}
	}
	code, stdout, _ = runCLI(t, "pull", "--json", "oci://"+last.Ref, "--local-dir", dev)
	if evs := jsonEvents(t, stdout); code != 0 || evs[len(evs)-1].Event != "skip" || evs[len(evs)-1].Reason != "up to date" {
		t.Errorf("second pull: exit %d %s", code, stdout)
	}
}

func TestPrepCommandExitCodes(t *testing.T) {
	tmp := t.TempDir()
	moe := filepath.Join(tmp, "moe")
	os.MkdirAll(moe, 0o755)
	for _, f := range []string{"model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, _ := os.ReadFile(filepath.Join(prepFixture, f))
		os.WriteFile(filepath.Join(moe, f), b, 0o644)
	}
	cfg, _ := os.ReadFile(filepath.Join(prepFixture, "config.json"))
	os.WriteFile(filepath.Join(moe, "config.json"), bytes.Replace(cfg, []byte(`"vocab_size": 2048`), []byte(`"vocab_size": 2048, "num_experts": 4`), 1), 0o644)
	nullCfg := filepath.Join(tmp, "nullcfg")
	os.MkdirAll(nullCfg, 0o755)
	for _, f := range []string{"model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, _ := os.ReadFile(filepath.Join(prepFixture, f))
		os.WriteFile(filepath.Join(nullCfg, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(nullCfg, "config.json"), []byte("null\n"), 0o644)
	cache := filepath.Join(tmp, "cache")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"prep", prepFixture, "-o", filepath.Join(tmp, "a")}, exitUsage, "target"},
		{[]string{"prep", prepFixture, "--target", "npu", "-o", filepath.Join(tmp, "a"), "--cache-dir", cache}, exitUsage, "unknown --target"},
		{[]string{"prep", prepFixture, "--target", "gguf", "--format", "sherry", "-o", filepath.Join(tmp, "a"), "--cache-dir", cache}, exitUsage, "tq2_0, tq1_0"},
		{[]string{"prep", filepath.Join(tmp, "missing"), "--target", "cpu", "-o", filepath.Join(tmp, "a"), "--cache-dir", cache}, exitError, "no such file"},
		{[]string{"prep", moe, "--target", "cpu", "-o", filepath.Join(tmp, "a"), "--cache-dir", cache}, exitBlocked, "experts"},
		// An unloadable input fails before any work, naming the user's file.
		{[]string{"prep", nullCfg, "--target", "cpu", "-o", filepath.Join(tmp, "a"), "--cache-dir", cache}, exitError, nullCfg + "/config.json"},
		// OUT may not hold or lie inside the source: --force would delete it.
		{[]string{"prep", moe, "--target", "cpu", "-o", tmp, "--cache-dir", cache, "--force"}, exitUsage, "it contains the input"},
		{[]string{"prep", moe, "--target", "cpu", "-o", filepath.Join(moe, "out"), "--cache-dir", cache}, exitUsage, "lies inside the input directory"},
		{[]string{"push", filepath.Join(tmp, "missing"), "localhost:1/x:1"}, exitError, "not a prep artifact"},
		{[]string{"pull", "oci://Not A Ref"}, exitUsage, "not an OCI reference"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		// Progress lines may come first; the error is the one last line.
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		last := lines[len(lines)-1]
		if code != tc.code || stdout != "" || !strings.HasPrefix(last, "edgectl: ") || !strings.Contains(last, tc.msg) {
			t.Errorf("%v: exit %d (want %d) stdout %q stderr %q", tc.args, code, tc.code, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "a")); !os.IsNotExist(err) {
		t.Error("a failed prep left its OUT")
	}
}

// The cobra layer only parses: flags land in the options as given.
func TestPrepFlagsReachOptions(t *testing.T) {
	var got *prepOptions
	cmd := newPrepCmdWith(&cli.IO{Out: io.Discard, ErrOut: io.Discard}, func(_ context.Context, _ *cli.IO, o *prepOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs([]string{"Qwen/Qwen3-1.7B@main", "--target", "ax650", "-o", "out", "--kv-cache-len", "2048", "--eos", "151645",
		"--image", "pulsar2:5.2", "--chip", "AX650", "--format", "s8", "--push", "reg/x:1", "--force"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Source != "Qwen/Qwen3-1.7B@main" || got.Target != "ax650" || got.KVCacheLen != 2048 || got.EOS == nil || *got.EOS != 151645 ||
		got.Image != "pulsar2:5.2" || got.Format != "s8" || got.Push != "reg/x:1" || !got.Force || got.Chip != "AX650" {
		t.Errorf("options %+v", got)
	}
}
