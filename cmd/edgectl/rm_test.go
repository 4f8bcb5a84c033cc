package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/internal/cli"
)

// TestRmRefusesWhatAServerHasLoaded: serve, in-process over the Hub cache,
// loads main's snapshot of the real tinystories model. rm of the repository
// is refused with how to unload; rm of v1, which the server does not use,
// goes (its snapshot and ref, not the blobs main shares) while the server
// keeps answering; after keep_alive 0 the repository goes.
func TestRmRefusesWhatAServerHasLoaded(t *testing.T) {
	tc := newTinyCache(t)
	url := tinyServer(t, tc.dir)
	loadOn(t, url, "tinystories-656k", nil)

	code, out, errOut := runCmd(t, "", "rm", tinyRepo, "--yes", "--host", url)
	if code != exitBusy || out != "" || !strings.Contains(errOut, "loaded by the server at "+url+" as tinystories-656k:latest") ||
		!strings.Contains(errOut, `"keep_alive":0`) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("rm of a loaded model: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if _, err := os.Stat(tc.repoDir()); err != nil {
		t.Fatalf("refused, but the repository is gone: %v", err)
	}
	// By serve's name, and through EDGECTL_HOST: refused alike.
	t.Setenv("EDGECTL_HOST", url)
	if code, _, errOut := runCmd(t, "", "rm", "tinystories-656k", "--yes"); code != exitBusy {
		t.Fatalf("rm by serve's name: exit %d, %s", code, errOut)
	}

	code, out, errOut = runCmd(t, "", "--json", "rm", tinyRepo+"@v1", "--yes")
	var res rmOutput
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("rm of the unloaded revision: exit %d\n%s%s", code, out, errOut)
	}
	if len(res.Deleted) != 1 || res.Deleted[0].Name != tinyRepo+"@"+tc.v1[:12] || res.Deleted[0].Source != sourceHub ||
		res.Freed != 111 || res.Deleted[0].Commits[0] != tc.v1 {
		t.Errorf("rm --json %+v: want v1 gone, freeing only its generation_config.json", res)
	}
	var raw struct {
		Deleted []map[string]any `json:"deleted"`
		Freed   *int64           `json:"freed"`
	}
	if json.Unmarshal([]byte(out), &raw) != nil || len(raw.Deleted) != 1 || raw.Freed == nil {
		t.Fatalf("rm --json shape:\n%s", out)
	}
	for _, k := range []string{"name", "source", "paths", "commits", "freed"} {
		if _, ok := raw.Deleted[0][k]; !ok {
			t.Errorf("rm --json deleted lacks %q: %v", k, raw.Deleted[0])
		}
	}
	if _, err := os.Stat(filepath.Join(tc.repoDir(), "snapshots", tc.v1)); !os.IsNotExist(err) {
		t.Errorf("v1's snapshot: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tc.repoDir(), "refs", "v1")); !os.IsNotExist(err) {
		t.Errorf("refs/v1: %v", err)
	}
	loadOn(t, url, "tinystories-656k", nil) // main's shared blobs are intact: it still generates
	code, out, _ = runCmd(t, "", "--json", "ls")
	var ls localModels
	if json.Unmarshal([]byte(out), &ls) != nil || len(ls.Models) != 1 || ls.Models[0].Revision != "main" || ls.Models[0].Size != tc.fixture-111+tc.newGenConf {
		t.Errorf("ls after rm of v1: exit %d\n%s", code, out)
	}

	loadOn(t, url, "tinystories-656k", &api.Duration{}) // unload
	code, out, errOut = runCmd(t, "", "rm", tinyRepo, "--yes")
	if code != 0 || !strings.Contains(out, "deleted "+tinyRepo) {
		t.Fatalf("rm after unloading: exit %d\n%s%s", code, out, errOut)
	}
	if ents, _ := os.ReadDir(tc.dir); len(ents) != 1 || ents[0].Name() != ".locks" {
		t.Errorf("cache root after rm: %v, want only .locks", ents)
	}
}

// A model in a models dir that a server has loaded is refused by path; a
// server that does not say where its models are (plain Ollama) by name.
func TestRmChecksModelDirsAndOtherServers(t *testing.T) {
	newTinyCache(t)
	root := hostModels(t)
	url := tinyServer(t, root)
	loadOn(t, url, "tinychat", nil)
	if code, _, errOut := runCmd(t, "", "rm", "tinychat", "--dir", root, "--yes", "--host", url); code != exitBusy {
		t.Fatalf("loaded model dir: exit %d, %s", code, errOut)
	}

	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/ps":
			w.Write([]byte(`{"models":[{"name":"tinystories-656k:latest","model":"tinystories-656k:latest","size":1}]}`))
		case "/api/show":
			w.Write([]byte(`{"model_info":{"general.architecture":"llama"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer ollama.Close()
	code, _, errOut := runCmd(t, "", "rm", filepath.Join(root, "tinystories-656k"), "--dir", root, "--yes", "--host", ollama.URL)
	if code != exitBusy || !strings.Contains(errOut, "as tinystories-656k:latest") {
		t.Fatalf("by name on another server: exit %d, %s", code, errOut)
	}

	// No server at all: nothing to check, the model dir goes; the fixture
	// files its entries link to stay.
	code, out, errOut := runCmd(t, "", "rm", "tinychat", "--dir", root, "--yes", "--host", "127.0.0.1:1")
	if code != 0 || !strings.Contains(errOut, "no server answers") || !strings.Contains(out, "deleted tinychat:latest") {
		t.Fatalf("no server: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(root, "tinychat")); !os.IsNotExist(err) {
		t.Errorf("tinychat: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runFixture, "model.safetensors")); err != nil {
		t.Fatalf("the fixture a link pointed to went too: %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Errorf("models dir holds %d entries (a temporary left?)", len(ents))
	}
}

// TestRmRefusesUnsafeNames: names that read as paths, a symlinked model,
// a model given to serve itself, and an unknown one are refused, and
// nothing is deleted; without a terminal, rm wants --yes.
func TestRmRefusesUnsafeNames(t *testing.T) {
	tc := newTinyCache(t)
	root := hostModels(t)
	prepSize := writePrepOutput(t, filepath.Join(root, "tiny-cpu"))
	outside := t.TempDir()
	writePrepOutput(t, filepath.Join(outside, "elsewhere"))
	if err := os.Symlink(filepath.Join(outside, "elsewhere"), filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	noServer := []string{"--host", "127.0.0.1:1", "--dir", root}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"../x"}, exitUsage, "not a model name"},
		{[]string{"raincandy-u/../../x"}, exitUsage, "not a model name"},
		{[]string{tinyRepo + "@../../refs/main"}, exitUsage, "not a model name"},
		{[]string{"/etc/../etc"}, exitUsage, "not a model name"},
		{[]string{"/etc"}, exitUsage, "not a model name"},
		{[]string{"~/models"}, exitUsage, "not a model name"},
		{[]string{"./tiny-cpu"}, exitUsage, "not a model name"},
		{[]string{tinyRepo + "@deadbeefdead"}, exitNotFound, "not in the Hub cache"},
		{[]string{"nope/nothing"}, exitNotFound, "no model named"},
		{[]string{"tinystories-656k"}, exitUsage, "names 4 models"},
		{[]string{"linked"}, exitError, "is a symlink to"},
		{[]string{"tiny-cpu"}, exitUsage, "pass --yes"},
	} {
		code, out, errOut := runCmd(t, "", append(append([]string{"rm"}, c.args...), noServer...)...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.says) {
			t.Errorf("rm %q: exit %d, stdout %q, stderr %s; want exit %d saying %q", c.args, code, out, errOut, c.code, c.says)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "elsewhere", "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	// A model given as a models dir itself is not rm's to delete.
	t.Setenv("EDGECTL_MODELS", filepath.Join(root, "tiny-cpu"))
	if code, _, errOut := runCmd(t, "", "rm", "tiny-cpu", "--yes", "--host", "127.0.0.1:1"); code != exitUsage || !strings.Contains(errOut, "given to serve as a model itself") {
		t.Errorf("a --models path itself: exit %d, %s", code, errOut)
	}
	t.Setenv("EDGECTL_MODELS", "")
	if _, err := os.Stat(tc.repoDir()); err != nil {
		t.Fatal(err)
	}

	// The prep output by its directory's name, and a model dir by the path ls shows.
	code, out, errOut := runCmd(t, "", append([]string{"--json", "rm", "tiny-cpu", filepath.Join(root, "tinystories-656k"), "--yes"}, noServer...)...)
	var res rmOutput
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Deleted) != 2 || res.Deleted[0].Source != sourcePrep ||
		res.Deleted[0].Freed != prepSize || res.Deleted[1].Freed != 0 {
		t.Fatalf("rm of a prep output and a linked model dir: exit %d\n%s%s", code, out, errOut)
	}
	for _, gone := range []string{"tiny-cpu", "tinystories-656k"} {
		if _, err := os.Stat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s: %v", gone, err)
		}
	}
}

// TestRmAsksOnATerminal: on a terminal rm lists what goes and asks; only
// "y" deletes.
func TestRmAsksOnATerminal(t *testing.T) {
	tc := newTinyCache(t)
	for _, answer := range []string{"n\n", "\n", "y\n"} {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pty: %v", err)
		}
		ptmx.Write([]byte(answer))
		var out, errOut bytes.Buffer
		io := &cli.IO{In: tty, Out: &out, ErrOut: &errOut}
		code := run(context.Background(), io, []string{"rm", tinyRepo + "@v1", "--host", "127.0.0.1:1"})
		ptmx.Close()
		tty.Close()
		_, err = os.Stat(filepath.Join(tc.repoDir(), "snapshots", tc.v1))
		if !strings.Contains(errOut.String(), "Delete "+tinyRepo+"@"+tc.v1[:12]+", freeing 111 B? [y/N]") {
			t.Errorf("answer %q: no question on stderr: %s", answer, errOut.String())
		}
		if yes := answer == "y\n"; code != map[bool]int{true: 0, false: exitError}[yes] || os.IsNotExist(err) != yes {
			t.Errorf("answer %q: exit %d, snapshot there: %v\n%s", answer, code, err == nil, errOut.String())
		}
	}
}
