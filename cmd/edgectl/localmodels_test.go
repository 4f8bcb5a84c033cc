package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/hub"
	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/serve"
)

// tinyRepo is the Hub id the housekeeping tests cache the tinystories
// fixture under; serve names it tinystories-656k.
const tinyRepo = "raincandy-u/TinyStories-656K"

// tinyCache is a Hugging Face cache holding the tinystories fixture at two
// revisions, written by the real download path from a fake Hub, in
// huggingface_hub's layout (blobs, snapshots of relative symlinks, refs):
// v1 is the fixture as is; main differs only in generation_config.json, so
// the two share every other blob. The environment points at it.
type tinyCache struct {
	dir        string
	v1, main   string // commits
	fixture    int64  // the fixture's bytes
	newGenConf int64  // main's generation_config.json
}

func newTinyCache(t *testing.T) *tinyCache {
	t.Helper()
	srv := hubtest.New()
	t.Cleanup(srv.Close)
	ents, err := os.ReadDir(runFixture)
	if err != nil {
		t.Skipf("no tinystories fixture: %v", err)
	}
	tc := &tinyCache{dir: t.TempDir()}
	files := func(genConf []byte) []*hubtest.File {
		var out []*hubtest.File
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(runFixture, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if genConf != nil && e.Name() == "generation_config.json" {
				b = genConf
			} else if genConf == nil {
				tc.fixture += int64(len(b))
			}
			out = append(out, &hubtest.File{Path: e.Name(), Content: hubtest.Bytes(b), LFS: strings.HasSuffix(e.Name(), ".safetensors")})
		}
		return out
	}
	_, tc.v1 = srv.AddRepo(tinyRepo, files(nil)...)
	srv.Tag(tinyRepo, "v1", tc.v1)
	genConf := []byte(`{"bos_token_id": 1, "eos_token_id": 2, "max_new_tokens": 64}` + "\n")
	tc.newGenConf = int64(len(genConf))
	_, tc.main = srv.AddRepo(tinyRepo, files(genConf)...)

	c, err := hub.NewClient(hub.Config{Endpoint: srv.URL(), CacheDir: tc.dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"v1", "main"} {
		if _, err := c.Snapshot(context.Background(), tinyRepo, rev, hub.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HF_HUB_CACHE", tc.dir)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1") // nothing here may reach a Hub
	t.Setenv("EDGECTL_MODELS", "")
	t.Setenv("EDGECTL_HOST", "")
	t.Setenv("EDGECTL_API_KEY", "")
	return tc
}

// repoDir is the repository's folder in the cache.
func (tc *tinyCache) repoDir() string { return filepath.Join(tc.dir, hub.RepoFolderName(tinyRepo)) }

// writePrepOutput writes a prep output for the cpu target, as prep leaves
// OUT/: the fixture's files, copied, and a manifest naming its source.
func writePrepOutput(t *testing.T, dir string) int64 {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(runFixture)
	for _, e := range ents {
		if err := copyFile(filepath.Join(runFixture, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	files, err := artifact.HashTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &artifact.Manifest{Schema: artifact.ManifestSchema, Target: "cpu", Options: json.RawMessage(`{}`), Steps: []artifact.StepRecord{},
		Source: artifact.Source{Repo: tinyRepo, Commit: strings.Repeat("ab", 20)}, Files: files}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, artifact.ManifestName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return ownBytes(dir)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// tinyServer serves dirs in-process on the real CPU lane, as edgectl serve
// does, and returns its URL.
func tinyServer(t *testing.T, dirs ...string) string {
	t.Helper()
	return inProcessServe(t, serve.Options{ModelDirs: dirs})
}

// loadOn loads model on the server at url with a two-token generation
// (keep_alive as given: nil keeps the server's default, 0 unloads).
func loadOn(t *testing.T, url, model string, keepAlive *api.Duration) {
	t.Helper()
	c, err := api.NewClient(url, "")
	if err != nil {
		t.Fatal(err)
	}
	n := 2
	req := &api.GenerateRequest{Model: model, Prompt: "Once upon a time", KeepAlive: keepAlive, Options: &api.Options{NumPredict: &n}}
	if keepAlive != nil && keepAlive.Duration == 0 {
		req.Prompt = "" // Ollama's unload request
	}
	if err := c.Generate(context.Background(), req, func(api.GenerateResponse) error { return nil }); err != nil {
		t.Fatalf("generate on %s with %s: %v", url, model, err)
	}
}
