package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/hub/hubtest"
)

// hubModelEnv serves the tinystories fixture as acme/TinyStories from a
// fake Hub (with a README and a GGUF export that run must not download)
// and points the Hub environment at it and at a fresh cache.
func hubModelEnv(t *testing.T) (srv *hubtest.Server, cache, commit string) {
	t.Helper()
	srv = hubtest.New()
	t.Cleanup(srv.Close)
	files := []*hubtest.File{
		{Path: "README.md", Content: hubtest.Bytes([]byte("# tiny\n"))},
		{Path: "tiny-q8_0.gguf", Content: hubtest.Generated(1, 3<<20), LFS: true},
	}
	ents, err := os.ReadDir(runFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(runFixture, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, &hubtest.File{Path: e.Name(), Content: hubtest.Bytes(b), LFS: strings.HasSuffix(e.Name(), ".safetensors")})
	}
	_, commit = srv.AddRepo("acme/TinyStories", files...)
	srv.AddRepo("acme/configs-only", &hubtest.File{Path: "config.json", Content: hubtest.Bytes([]byte(`{}`))})
	return srv, hubEnv(t, srv.URL()), commit
}

func TestRunHubIDPullsOnceThenRunsFromTheCache(t *testing.T) {
	srv, cache, commit := hubModelEnv(t)
	_, want, _ := runCmd(t, "", "run", runFixture, "Once upon a time", "-n", "6", "--temperature", "0")

	code, out, errOut := runCmd(t, "", "run", "acme/TinyStories", "Once upon a time", "-n", "6", "--temperature", "0")
	if code != 0 || out != want {
		t.Fatalf("first run: exit %d, stdout %q (want %q), stderr %s", code, out, want, errOut)
	}
	if !strings.Contains(errOut, "pulling it from the Hub") || !strings.Contains(errOut, "acme/TinyStories@main → commit "+commit[:12]) {
		t.Errorf("no pull on stderr: %s", errOut)
	}
	snap := filepath.Join(cache, "models--acme--TinyStories", "snapshots", commit)
	for name, wantThere := range map[string]bool{"model.safetensors": true, "tokenizer.json": true, "README.md": false, "tiny-q8_0.gguf": false} {
		if _, err := os.Stat(filepath.Join(snap, name)); (err == nil) != wantThere {
			t.Errorf("%s in the snapshot: %v, want %v", name, err == nil, wantThere)
		}
	}

	// Cached: no request at all, the same answer, and the Hub id as the name.
	srv.ResetLog()
	code, out, errOut = runCmd(t, "", "--json", "run", "acme/TinyStories@main", "Once upon a time", "-n", "6", "--temperature", "0")
	var st runStats
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("cached run: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if st.Model != "acme/TinyStories@main" || st.Text+"\n" != want {
		t.Errorf("cached run %+v, want text %q", st, want)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("a cached model went to the network: %+v", reqs)
	}

	// Offline and cached is fine; offline and missing is exit 12.
	t.Setenv("HF_HUB_OFFLINE", "1")
	if code, _, errOut := runCmd(t, "", "run", "acme/TinyStories", "Once", "-n", "2"); code != 0 {
		t.Errorf("offline, cached: exit %d %s", code, errOut)
	}
	code, _, errOut = runCmd(t, "", "run", "acme/Other", "Once", "-n", "2")
	if code != exitOffline || !strings.Contains(errOut, "HF_HUB_OFFLINE") || !strings.Contains(errOut, "acme/Other") {
		t.Errorf("offline, missing: exit %d, %s", code, errOut)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("offline runs went to the network: %+v", reqs)
	}
}

func TestRunHubIDErrors(t *testing.T) {
	hubModelEnv(t)
	code, _, errOut := runCmd(t, "", "run", "acme/missing", "hi")
	if code != exitNotFound || !strings.Contains(errOut, "neither a file or directory here nor a model on the Hub") {
		t.Errorf("unknown repo: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCmd(t, "", "run", "acme/configs-only", "hi")
	if code != exitError || !strings.Contains(errOut, "no safetensors checkpoint") {
		t.Errorf("repo without weights: exit %d, %s", code, errOut)
	}
	// Not Hub ids: the loader's own error, no Hub involved.
	for _, arg := range []string{"./acme/missing", "missing.gguf", "a/b/c"} {
		if code, _, errOut := runCmd(t, "", "run", arg, "hi"); code != exitError || strings.Contains(errOut, "Hub") {
			t.Errorf("%s: exit %d, %s", arg, code, errOut)
		}
	}
}

func TestRunLocalPathWinsOverHubID(t *testing.T) {
	srv, _, _ := hubModelEnv(t)
	fixture, _ := filepath.Abs(runFixture)
	t.Chdir(t.TempDir())
	if err := os.Mkdir("acme", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fixture, filepath.Join("acme", "TinyStories")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "run", "acme/TinyStories", "Once upon a time", "-n", "3")
	if code != 0 || out == "" || strings.Contains(errOut, "Hub") {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("a local path went to the Hub: %+v", reqs)
	}
}

func TestRunCompletesAPartialSnapshot(t *testing.T) {
	srv, _, _ := hubModelEnv(t)
	if code, _, errOut := runCLI(t, "pull", "acme/TinyStories", "--include", "*.json"); code != 0 {
		t.Fatalf("pull: %s", errOut)
	}
	srv.ResetLog()
	if code, _, errOut := runCmd(t, "", "run", "acme/TinyStories", "Once", "-n", "2"); code != 0 {
		t.Fatalf("exit %d, %s", code, errOut)
	}
	if srv.Served("model.safetensors") == 0 {
		t.Error("the weights were not pulled")
	}
}

func TestServeModelsHubID(t *testing.T) {
	srv, cache, commit := hubModelEnv(t)
	snap := filepath.Join(cache, "models--acme--TinyStories", "snapshots", commit)
	ev := serveJSON(t, "--addr", "127.0.0.1:0", "--models", "acme/TinyStories", "--models", "mine=acme/TinyStories@main")
	got := map[string]string{}
	for _, m := range ev.Models {
		got[m["name"]] = m["path"]
	}
	if len(got) != 2 || got["tinystories:latest"] != snap || got["mine:latest"] != snap {
		t.Errorf("models %v, want tinystories and mine at %s", ev.Models, snap)
	}
	for _, model := range []string{"acme/TinyStories", "tinystories", "mine"} {
		resp, err := http.Post(ev.URL+"/api/generate", "application/json",
			strings.NewReader(`{"model":"`+model+`","prompt":"Once upon a time","stream":false,"options":{"num_predict":2}}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"done":true`) {
			t.Errorf("%s: %d %s", model, resp.StatusCode, b)
		}
	}
	if code := ev.Stop(); code != 0 {
		t.Errorf("exit %d: %s", code, ev.ErrOut)
	}

	// Cached now: a second serve starts without the network.
	srv.ResetLog()
	cached := serveJSON(t, "--addr", "127.0.0.1:0", "--models", "acme/TinyStories")
	cached.Stop()
	if len(cached.Models) != 1 || len(srv.Requests()) != 0 {
		t.Errorf("cached serve: models %v, requests %+v", cached.Models, srv.Requests())
	}

	t.Setenv("HF_HUB_OFFLINE", "1")
	code, _, errOut := runCLI(t, "serve", "--models", "acme/Other")
	if code != exitOffline || !strings.Contains(errOut, "HF_HUB_OFFLINE") {
		t.Errorf("offline, missing: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "serve", "--models", "./not-here")
	if code != exitUsage || !strings.Contains(errOut, "--models ./not-here") {
		t.Errorf("missing path: exit %d, %s", code, errOut)
	}
}

func TestHubRefSpelling(t *testing.T) {
	t.Chdir(t.TempDir())
	os.MkdirAll("here/model", 0o755)
	for arg, want := range map[string]string{
		"Qwen/Qwen3-0.6B":         "Qwen/Qwen3-0.6B@",
		"Qwen/Qwen3-0.6B@v1.0":    "Qwen/Qwen3-0.6B@v1.0",
		"acme/tiny@refs/pr/1":     "acme/tiny@refs/pr/1",
		"here/model":              "", // exists: a path
		"gpt2":                    "", // no org: never a Hub id
		"a/b/c":                   "",
		"./acme/tiny":             "",
		"~/acme":                  "",
		"acme/tiny@":              "",
		"acme--x/tiny":            "",
		"https://hf.co/acme/tiny": "",
	} {
		repo, rev, ok := hubRef(arg)
		got := ""
		if ok {
			got = repo + "@" + rev
		}
		if got != want {
			t.Errorf("hubRef(%q) = %q, want %q", arg, got, want)
		}
	}
}
