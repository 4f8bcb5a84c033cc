package prep

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/hub/hubtest"
	"github.com/edgectl/edgectl/internal/errkind"
)

// fakeHub serves the files of dir as repo from a fake Hub (LFS and CDN for
// the weights) and points the Hub environment at it and at a fresh cache.
func fakeHub(t *testing.T, repo, dir string) string {
	t.Helper()
	srv := hubtest.New()
	t.Cleanup(srv.Close)
	names, err := artifact.ListFiles(dir)
	must(t, err)
	var files []*hubtest.File
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		must(t, err)
		files = append(files, &hubtest.File{Path: n, Content: hubtest.Bytes(b), LFS: strings.HasSuffix(n, ".safetensors")})
	}
	// Files a real repo has that prep must leave behind.
	files = append(files, &hubtest.File{Path: "README.md", Content: hubtest.Bytes([]byte("# model card\n"))},
		&hubtest.File{Path: "pytorch_model.bin", Content: hubtest.Generated(1, 4096), LFS: true})
	_, commit := srv.AddRepo(repo, files...)
	t.Setenv("HF_ENDPOINT", srv.URL())
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	return commit
}

// greedy loads path with the CPU engine (serve's default lane) and returns
// the greedy continuation of prompt.
func greedy(t *testing.T, path, prompt string, n int) ([]int, string) {
	t.Helper()
	ctx := context.Background()
	m, err := cpu.New().Load(ctx, path, engine.LoadOptions{Threads: 2})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	defer m.Close()
	s, err := m.NewSession()
	must(t, err)
	defer s.Close()
	zero := 0.0
	var ids []int
	var text strings.Builder
	_, err = s.Generate(ctx, engine.Request{Prompt: prompt, MaxTokens: n, Sampling: engine.Sampling{Temperature: &zero}},
		func(tok engine.Token) error {
			ids = append(ids, tok.ID)
			text.WriteString(tok.Text)
			return nil
		})
	must(t, err)
	return ids, text.String()
}

func TestE2EHubToCPUAnswers(t *testing.T) {
	commit := fakeHub(t, "acme/tinystories-656k", tinyStories)
	tmp := t.TempDir()
	out := filepath.Join(tmp, "models", "tinystories")
	res, err := Run(context.Background(), nil, Options{Source: "acme/tinystories-656k@main", Target: TargetCPU, Out: out, CacheDir: filepath.Join(tmp, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Manifest.Source; s.Repo != "acme/tinystories-656k" || s.Commit != commit || s.Revision != "main" {
		t.Errorf("manifest source %+v, want commit %s", s, commit)
	}
	for _, f := range res.Manifest.Files {
		if f.Path == "README.md" || f.Path == "pytorch_model.bin" {
			t.Errorf("OUT carries %s", f.Path)
		}
	}
	// The model in OUT answers exactly as the fixture does.
	gotIDs, text := greedy(t, out, "Once upon a time", 12)
	wantIDs, _ := greedy(t, tinyStories, "Once upon a time", 12)
	if len(gotIDs) == 0 || strings.TrimSpace(text) == "" || !slices.Equal(gotIDs, wantIDs) {
		t.Fatalf("OUT answered %v %q, the source answers %v", gotIDs, text, wantIDs)
	}
	// serve --models picks OUT up and answers the same through its API.
	if got := serveGenerate(t, filepath.Join(tmp, "models"), "", "tinystories", "Once upon a time", 12); got != text {
		t.Errorf("serve answered %q, the engine on OUT %q", got, text)
	}
	t.Logf("serve answers: Once upon a time%s", text)

	// A second run finds everything cached, the Hub included.
	var log eventLog
	if _, err := Run(context.Background(), log.sink(), Options{Source: "acme/tinystories-656k@main", Target: TargetCPU, Out: out, CacheDir: filepath.Join(tmp, "cache")}); err != nil {
		t.Fatal(err)
	}
	if s := stepsWith(log.events(t), "skip"); strings.Join(s, ",") != "pull,check,import,out" {
		t.Errorf("second run skipped %v", s)
	}

	// Offline (HF_HUB_OFFLINE=1, as on an air-gapped builder) the Hub cache
	// answers and the run completes from the step cache.
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1") // nothing listens: any request would fail
	log = eventLog{}
	if _, err := Run(context.Background(), log.sink(), Options{Source: "acme/tinystories-656k@main", Target: TargetCPU, Out: out, CacheDir: filepath.Join(tmp, "cache")}); err != nil {
		t.Fatalf("offline rerun: %v", err)
	}
	if s := stepsWith(log.events(t), "skip"); strings.Join(s, ",") != "pull,check,import,out" {
		t.Errorf("offline run skipped %v", s)
	}
}

func TestE2EHubToH1BAnswers(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "bitnet-tiny")
	writeBitNet(t, src)
	fakeHub(t, "acme/bitnet-tiny", src)
	for _, format := range []string{"sherry", "tq1h"} {
		out := filepath.Join(tmp, "models-"+format, "bitnet")
		res, err := Run(context.Background(), nil, Options{Source: "acme/bitnet-tiny", Target: TargetH1B, Format: format, Out: out, CacheDir: filepath.Join(tmp, "cache")})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range res.Manifest.Files {
			names = append(names, f.Path)
		}
		if strings.Join(names, ",") != "bitnet-tiny.h1b,bitnet-tiny.htok,tokenizer.json,tokenizer_config.json" {
			t.Errorf("%s: OUT holds %v", format, names)
		}
		// The packed model generates what the float checkpoint generates.
		got, gotText := greedy(t, filepath.Join(out, "bitnet-tiny.h1b"), "Once upon a time", 8)
		want, _ := greedy(t, src, "Once upon a time", 8)
		if len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: packed model says %v, float checkpoint %v", format, got, want)
		}
		// serve --models finds the .h1b one level down and answers the same.
		if s := serveGenerate(t, filepath.Join(tmp, "models-"+format), "", "bitnet-tiny", "Once upon a time", 8); s != gotText {
			t.Errorf("%s: serve answered %q, the engine %q", format, s, gotText)
		}
	}
}

func TestE2EGGUFAnswers(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "bitnet-tiny")
	writeBitNet(t, src)
	out := filepath.Join(tmp, "OUT")
	if _, err := Run(context.Background(), nil, Options{Source: src, Target: TargetGGUF, Out: out, CacheDir: filepath.Join(tmp, "cache")}); err != nil {
		t.Fatal(err)
	}
	got, _ := greedy(t, filepath.Join(out, "bitnet-tiny.gguf"), "Once upon a time", 8)
	want, _ := greedy(t, src, "Once upon a time", 8)
	if len(got) == 0 || !slices.Equal(got, want) {
		t.Errorf("TQ2_0 GGUF says %v, float checkpoint %v", got, want)
	}
	// The Llama fixture has rows of 128, which TQ2_0 (blocks of 256) cannot take.
	_, err := Run(context.Background(), nil, Options{Source: tinyStories, Target: TargetGGUF, Out: filepath.Join(tmp, "bad"), CacheDir: filepath.Join(tmp, "cache")})
	if err == nil || errkind.Of(err) != errkind.Input || strings.Contains(err.Error(), tmp) {
		t.Errorf("gguf of 128-wide rows: %v", err)
	}
	t.Logf("gguf of 128-wide rows: %v", err)
}
