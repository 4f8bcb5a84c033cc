package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLsListsEveryPlaceOnce: the Hub cache's two revisions (their shared
// blobs counted once in the cache's size and the total), two model dirs
// that link to the same fixture files (each sized in full, counted once in
// the total) and a prep output, each with the format the CPU engine's Probe
// gives and the names serve answers to.
func TestLsListsEveryPlaceOnce(t *testing.T) {
	tc := newTinyCache(t)
	root := hostModels(t) // tinystories-656k and tinychat: symlinks to the fixture's files
	prepSize := writePrepOutput(t, filepath.Join(root, "tiny-cpu"))

	code, out, errOut := runCmd(t, "", "--json", "ls", "--dir", root)
	if code != 0 {
		t.Fatalf("ls --json: exit %d: %s", code, errOut)
	}
	var ls localModels
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		t.Fatalf("ls --json is not one document: %v\n%s", err, out)
	}
	// The document's keys, as docs/models.md shows them.
	var raw struct {
		Models []map[string]any `json:"models"`
		Caches []map[string]any `json:"hub_caches"`
		Dirs   []string         `json:"dirs"`
		Size   *int64           `json:"size"`
	}
	if json.Unmarshal([]byte(out), &raw) != nil || len(raw.Models) == 0 || len(raw.Caches) != 1 || raw.Size == nil || len(raw.Dirs) != 1 {
		t.Fatalf("ls --json shape:\n%s", out)
	}
	for _, k := range []string{"name", "source", "revision", "commit", "refs", "format", "lane", "size", "modified", "path", "serve_names"} {
		if _, ok := raw.Models[0][k]; !ok {
			t.Errorf("ls --json model lacks %q: %v", k, raw.Models[0])
		}
	}
	for _, k := range []string{"dir", "repos", "size_on_disk"} {
		if _, ok := raw.Caches[0][k]; !ok {
			t.Errorf("ls --json hub_caches lacks %q: %v", k, raw.Caches[0])
		}
	}
	byKey := map[string]localModel{}
	for _, m := range ls.Models {
		byKey[m.Source+" "+m.Name+" "+m.Revision] = m
	}
	v1, main := byKey["hub-cache "+tinyRepo+" v1"], byKey["hub-cache "+tinyRepo+" main"]
	if v1.Commit != tc.v1 || main.Commit != tc.main || len(ls.Models) != 5 {
		t.Fatalf("models %+v: want v1 and main of %s, two model dirs and the prep output", ls.Models, tinyRepo)
	}
	genConf := int64(111) // the fixture's generation_config.json, which main replaces
	if v1.Size != tc.fixture || main.Size != tc.fixture-genConf+tc.newGenConf {
		t.Errorf("revision sizes %d and %d, want %d and %d", v1.Size, main.Size, tc.fixture, tc.fixture-genConf+tc.newGenConf)
	}
	cacheSize := tc.fixture + tc.newGenConf // every blob once
	if len(ls.Caches) != 1 || ls.Caches[0].Dir != tc.dir || ls.Caches[0].SizeOnDisk != cacheSize || ls.Caches[0].Repos != 1 {
		t.Errorf("caches %+v, want %s holding 1 repo in %d bytes", ls.Caches, tc.dir, cacheSize)
	}
	for _, m := range []localModel{v1, main} {
		if m.Format != "safetensors" || m.Lane != "cpu" || !slices.Contains(m.ServeNames, "tinystories-656k:latest") ||
			!strings.HasPrefix(m.Path, tc.repoDir()) || m.Modified.IsZero() {
			t.Errorf("hub row %+v", m)
		}
	}
	story, chat := byKey["dir tinystories-656k:latest "], byKey["dir tinychat:latest "]
	if story.Format != "safetensors" || story.Lane != "cpu" || story.Path != filepath.Join(root, "tinystories-656k") || story.Size != tc.fixture {
		t.Errorf("model dir row %+v, want safetensors on cpu, %d bytes (its links' targets)", story, tc.fixture)
	}
	prep := byKey["prep tinystories-656k:latest "+tinyRepo+"@abababababab"]
	if prep.Path != filepath.Join(root, "tiny-cpu") || prep.Target != "cpu" || prep.Format != "safetensors" ||
		prep.Size != prepSize || !slices.Contains(prep.ServeNames, "tiny-cpu:latest") {
		t.Errorf("prep row %+v, want %d bytes, target cpu, named tiny-cpu too", prep, prepSize)
	}
	// The total: the cache's blobs once, the fixture files both model dirs
	// link to once (tinychat's own tokenizer_config.json on top), the prep
	// output's copies.
	chatOwn, _ := os.Stat(filepath.Join(root, "tinychat", "tokenizer_config.json"))
	if want := cacheSize + tc.fixture + chatOwn.Size() + prepSize; ls.Size != want {
		t.Errorf("total %d, want %d; rows: chat %d", ls.Size, want, chat.Size)
	}

	// The table: one line per model, the names rm takes.
	code, out, errOut = runCmd(t, "", "ls", "--dir", root)
	if code != 0 || !strings.HasPrefix(out, "NAME") || strings.Count(out, "\n") != 6 {
		t.Fatalf("ls: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{tinyRepo, "v1", "main", "tinychat:latest", "prep cpu: " + filepath.Join(root, "tiny-cpu"), "hub cache", "safetensors"} {
		if !strings.Contains(out, want) {
			t.Errorf("ls output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "5 models") {
		t.Errorf("no summary on stderr: %s", errOut)
	}

	// EDGECTL_MODELS is one of serve's model dirs: listed without --dir.
	t.Setenv("EDGECTL_MODELS", root)
	code, out, _ = runCmd(t, "", "--json", "ls")
	if code != 0 || !strings.Contains(out, `"tinychat:latest"`) {
		t.Errorf("ls with EDGECTL_MODELS: exit %d\n%s", code, out)
	}
}

// A Hub cache given as a models dir (serve --models ~/.cache/huggingface/hub)
// is listed as the cache: each revision once, not also as a served model.
func TestLsHubCacheAsModelsDir(t *testing.T) {
	tc := newTinyCache(t)
	t.Setenv("HF_HUB_CACHE", t.TempDir()) // the default cache is elsewhere, empty
	code, out, errOut := runCmd(t, "", "--json", "ls", "--dir", tc.dir)
	var ls localModels
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if len(ls.Models) != 2 || ls.Models[0].Source != sourceHub || ls.Models[1].Source != sourceHub || len(ls.Caches) != 2 {
		t.Errorf("models %+v, caches %+v: want the two revisions, from the second cache", ls.Models, ls.Caches)
	}
	if ls.Size != tc.fixture+tc.newGenConf {
		t.Errorf("total %d, want the cache's %d", ls.Size, tc.fixture+tc.newGenConf)
	}
}
