package serve

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/artifact"
)

// hfSnapshot lays out CACHE/models--ORG--NAME/snapshots/<commit>/ as
// huggingface_hub does, with the tinystories checkpoint in it, and points
// refs/main at it when main is set.
func hfSnapshot(t *testing.T, cache, repo, commit string, main bool) string {
	t.Helper()
	folder := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	snap := tinyDir(t, filepath.Join(folder, "snapshots"), commit)
	if main {
		if err := os.MkdirAll(filepath.Join(folder, "refs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, "refs", "main"), []byte(commit), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

func names(r *Registry) []string {
	var out []string
	for _, e := range r.List() {
		out = append(out, e.Name)
	}
	return out
}

const (
	commitA = "0123456789abcdef0123456789abcdef01234567"
	commitB = "89abcdef0123456789abcdef0123456789abcdef"
)

func TestRegistryNamesHubSnapshotsAfterTheirRepo(t *testing.T) {
	cache := t.TempDir()
	snap := hfSnapshot(t, cache, "Qwen/Qwen3-0.6B", commitA, true)
	hfSnapshot(t, cache, "gpt2", commitB, true) // a legacy id without an org
	// A GGUF repo: its files keep their own names.
	gg := filepath.Join(cache, "models--acme--Tiny-GGUF", "snapshots", commitA)
	os.MkdirAll(gg, 0o755)
	os.WriteFile(filepath.Join(gg, "Tiny-Q4_K_M.gguf"), []byte("GGUF"), 0o644)
	os.WriteFile(filepath.Join(gg, "Tiny-Q8_0.gguf"), []byte("GGUF"), 0o644)

	// The snapshot directory `edgectl pull` prints.
	r := NewRegistry([]string{snap}, builtinEngines(), nil)
	if got := names(r); !slices.Equal(got, []string{"qwen3-0.6b:latest"}) {
		t.Fatalf("snapshot named %v, want qwen3-0.6b:latest", got)
	}
	for _, ask := range []string{"qwen3-0.6b", "Qwen/Qwen3-0.6B", "qwen/qwen3-0.6b:latest", "QWEN3-0.6B:latest"} {
		if e, ok := r.Lookup(ask); !ok || e.Path != snap {
			t.Errorf("Lookup(%q) = %+v, %v", ask, e, ok)
		}
	}
	if e, _ := r.Lookup("qwen3-0.6b"); !slices.Equal(e.Aliases, []string{"qwen/qwen3-0.6b:latest"}) {
		t.Errorf("aliases %v", e.Aliases)
	}
	if _, ok := r.Lookup(commitA); ok {
		t.Error("the commit hash is still a name")
	}

	// The whole cache, and one repo's folder.
	r = NewRegistry([]string{cache}, builtinEngines(), nil)
	want := []string{"gpt2:latest", "qwen3-0.6b:latest", "tiny-q4_k_m:latest", "tiny-q8_0:latest"}
	if got := names(r); !slices.Equal(got, want) {
		t.Errorf("cache root: %v, want %v", got, want)
	}
	r = NewRegistry([]string{filepath.Join(cache, "models--Qwen--Qwen3-0.6B")}, builtinEngines(), nil)
	if got := names(r); !slices.Equal(got, []string{"qwen3-0.6b:latest"}) {
		t.Errorf("repo folder: %v", got)
	}
}

func TestRegistryServesTheSnapshotMainPointsAt(t *testing.T) {
	cache := t.TempDir()
	old := hfSnapshot(t, cache, "acme/tiny", commitA, true)
	newer := hfSnapshot(t, cache, "acme/tiny", commitB, false)
	past := time.Now().Add(-time.Hour)
	os.Chtimes(old, past, past)
	folder := filepath.Join(cache, "models--acme--tiny")
	if e, ok := NewRegistry([]string{folder}, builtinEngines(), nil).Lookup("acme/tiny"); !ok || e.Path != old {
		t.Errorf("with refs/main: %+v, want %s", e, old)
	}
	os.Remove(filepath.Join(folder, "refs", "main"))
	if e, ok := NewRegistry([]string{folder}, builtinEngines(), nil).Lookup("tiny"); !ok || e.Path != newer {
		t.Errorf("without refs/main: %+v, want the newest %s", e, newer)
	}
}

func TestParseModelSpec(t *testing.T) {
	root := t.TempDir()
	withEq := filepath.Join(root, "a=b")
	os.MkdirAll(withEq, 0o755)
	for _, c := range []struct{ in, name, path string }{
		{"/models", "", "/models"},
		{"qwen=/models/q", "qwen", "/models/q"},
		{"Qwen/Chat:v2=/m", "Qwen/Chat:v2", "/m"},
		{"qwen=Qwen/Qwen3-0.6B@main", "qwen", "Qwen/Qwen3-0.6B@main"},
		{withEq, "", withEq},                 // an existing path wins, '=' and all
		{"x=" + withEq, "x", withEq},         // only the first '=' splits
		{"./m=/x", "", "./m=/x"},             // not a name before '=': a path
		{"my model=/x", "", "my model=/x"},   // idem
		{"=/x", "", "=/x"},                   // idem
		{"name=", "", "name="},               // no path after '='
		{filepath.Join(root, "c=d"), "", ""}, // missing, and "/…/c" is no name
	} {
		want := c.path
		if want == "" {
			want = c.in
		}
		if n, p := ParseModelSpec(c.in); n != c.name || p != want {
			t.Errorf("ParseModelSpec(%q) = %q, %q; want %q, %q", c.in, n, p, c.name, want)
		}
	}
}

func TestRegistryExplicitNames(t *testing.T) {
	root := t.TempDir()
	tiny := tinyDir(t, root, "tiny")
	eq := tinyDir(t, root, "odd=dir")
	cache := t.TempDir()
	snap := hfSnapshot(t, cache, "acme/Tiny", commitA, true)
	many := t.TempDir()
	os.WriteFile(filepath.Join(many, "x.gguf"), []byte("GGUF"), 0o644)

	r := NewRegistry([]string{
		"Mine=" + tiny,        // a name for one model
		eq,                    // a path with '=' in it
		"other=" + eq,         // and named
		"fixed:v1=" + snap,    // beats the repo name
		snap,                  // named tiny, alias acme/tiny …
		"acme/tiny=" + tiny,   // … which this name takes over
		"bundle=" + many,      // a directory of models cannot take one name
		"gone=" + root + "/x", // missing
	}, builtinEngines(), nil)
	want := []string{"acme/tiny:latest", "fixed:v1", "mine:latest", "odd-dir:latest", "other:latest", "tiny:latest"}
	if got := names(r); !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	for ask, path := range map[string]string{"mine": tiny, "odd-dir": eq, "other": eq, "fixed:v1": snap, "tiny": snap, "acme/tiny": tiny} {
		if e, ok := r.Lookup(ask); !ok || e.Path != path {
			t.Errorf("Lookup(%q) = %+v, want %s", ask, e, path)
		}
	}
	if e, _ := r.Lookup("tiny"); len(e.Aliases) != 0 {
		t.Errorf("alias kept after another model took it as its name: %v", e.Aliases)
	}
	warn := strings.Join(r.Warnings(), "\n")
	for _, w := range []string{"bundle=" + many + ": " + many + " is not one model", "gone=" + root + "/x"} {
		if !strings.Contains(warn, w) {
			t.Errorf("warnings %q lack %q", warn, w)
		}
	}
}

func TestRegistryNamesPrepOutputsAfterTheirSource(t *testing.T) {
	root := t.TempDir()
	manifest := func(dir string, src artifact.Source) {
		t.Helper()
		b, err := (&artifact.Manifest{Schema: artifact.ManifestSchema, Target: "cpu", Source: src}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, artifact.ManifestName), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hubOut := tinyDir(t, root, "out-cpu")
	manifest(hubOut, artifact.Source{Repo: "Qwen/Qwen3-0.6B", Revision: "main", Commit: commitA})
	dirOut := filepath.Join(root, "out-gguf")
	os.MkdirAll(dirOut, 0o755)
	os.WriteFile(filepath.Join(dirOut, "weights.gguf"), []byte("GGUF"), 0o644)
	manifest(dirOut, artifact.Source{Dir: "My-Llama", TreeSHA256: strings.Repeat("0", 64)})
	axOut := axDir(t, root, "out-ax650", `{}`, 1)
	manifest(axOut, artifact.Source{Repo: "AXERA-TECH/Qwen3-1.7B"})
	// Not prep's: another schema, and a manifest that is a directory.
	foreign := tinyDir(t, root, "foreign")
	os.WriteFile(filepath.Join(foreign, "manifest.json"), []byte(`{"schema":"other/v1","source":{"repo":"x/evil"}}`), 0o644)
	odd := tinyDir(t, root, "odd")
	os.Mkdir(filepath.Join(odd, "manifest.json"), 0o755)

	r := NewRegistry([]string{root}, builtinEngines(), nil)
	want := []string{"foreign:latest", "my-llama:latest", "odd:latest", "qwen3-0.6b:latest", "qwen3-1.7b:latest"}
	if got := names(r); !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	for ask, path := range map[string]string{"qwen/qwen3-0.6b": hubOut, "axera-tech/qwen3-1.7b": axOut, "my-llama": filepath.Join(dirOut, "weights.gguf")} {
		if e, ok := r.Lookup(ask); !ok || e.Path != path {
			t.Errorf("Lookup(%q) = %+v, want %s", ask, e, path)
		}
	}
	if e, ok := r.Lookup("qwen3-1.7b"); !ok || e.Lane != LaneAxcl {
		t.Errorf("ax650 output %+v", e)
	}
}

// A request may name a model by its alias; the answer and /metrics use
// the served name, so aliases add no label values.
func TestServeAnswersToTheRepoAlias(t *testing.T) {
	snap := hfSnapshot(t, t.TempDir(), "Acme/TinyStories", commitA, true)
	ts := start(t, Options{ModelDirs: []string{snap}})
	code, _, body := post(t, ts.URL+"/api/generate",
		`{"model":"Acme/TinyStories","prompt":"Once upon a time","stream":false,"options":{"num_predict":2,"temperature":0}}`)
	if code != 200 || !strings.Contains(string(body), `"done":true`) {
		t.Fatalf("generate by alias: %d %s", code, body)
	}
	_, tags := get(t, ts.URL+"/api/tags")
	if !strings.Contains(string(tags), `"name":"tinystories:latest"`) || strings.Contains(string(tags), commitA+":") {
		t.Errorf("/api/tags %s", tags)
	}
	_, metrics := get(t, ts.URL+"/metrics")
	if strings.Contains(string(metrics), `model="acme/tinystories`) || !strings.Contains(string(metrics), `model="tinystories:latest"`) {
		t.Errorf("/metrics labels the alias:\n%s", metrics)
	}
}
