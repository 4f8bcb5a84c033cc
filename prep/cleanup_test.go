package prep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/testbin"
)

// temporaries lists the edgectl temporaries directly in dir.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		if _, ok := atomicfile.IsTemp(e.Name()); ok || strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A step that fails leaves nothing in the cache: not its partial output,
// not an entry. Its error names the source, not the cache entry it read.
func TestFailedStepLeavesNothingAndNamesTheSource(t *testing.T) {
	tmp := t.TempDir()
	cache, err := OpenCache(filepath.Join(tmp, "cache"))
	must(t, err)
	src := filepath.Join(tmp, "model")
	copyFixture(t, src)
	var stepIn string
	steps := []Step{
		importStep(true),
		newStep("pack", 1, struct{}{}, func(ctx context.Context, sc *StepContext, _ struct{}) error {
			stepIn = sc.In
			// A partial output, as a step killed by its own error leaves.
			must(t, os.MkdirAll(sc.Out, 0o755))
			must(t, os.WriteFile(filepath.Join(sc.Out, "half.gguf"), make([]byte, 1<<20), 0o644))
			return errkind.Wrap(errkind.Input, fmt.Errorf("%s: tensor %q is F8_E4M3, which this format cannot hold",
				filepath.Join(sc.In, "model.safetensors"), "lm_head.weight"))
		}),
	}
	r := &runner{cache: cache, srcDir: src, srcShow: "./model"}
	_, _, _, err = r.run(context.Background(), src, "local:x", steps)
	if err == nil {
		t.Fatal("the failing step passed")
	}
	want := `prep step pack: ./model/model.safetensors: tensor "lm_head.weight" is F8_E4M3`
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), cache.Dir) || errkind.Of(err) != errkind.Input {
		t.Errorf("error %q (kind %v), want %q… naming the source, bad input", err, errkind.Of(err), want)
	}
	if !strings.HasPrefix(stepIn, cache.Dir) {
		t.Fatalf("the step read %s, not a cache entry: the test shows nothing", stepIn)
	}
	es, _ := os.ReadDir(filepath.Join(cache.Dir, "steps"))
	if len(es) != 1 { // the import entry, finished before the failure
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("cache steps after a failed step: %v, want only the finished import", names)
	}
}

// Opening the cache removes what killed runs left (their half-written
// steps, entries they were replacing, memo temporaries) and nothing else.
func TestOpenCacheSweepsKilledRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	dead := strconv.Itoa(testbin.DeadPID(t))
	stale := []string{
		filepath.Join(dir, "steps", ".0123abcd.edgectl-tmp-"+dead+"-77"),
		filepath.Join(dir, "filehash", ".9f9f.edgectl-tmp-"+dead+"-78"),
	}
	live := filepath.Join(dir, "steps", ".4567.edgectl-tmp-"+strconv.Itoa(os.Getppid())+"-79")
	entry := filepath.Join(dir, "steps", "0123abcd")
	for _, p := range append(stale, live, entry) {
		must(t, os.MkdirAll(filepath.Join(p, "out"), 0o755))
		must(t, os.WriteFile(filepath.Join(p, "out", "model.safetensors"), make([]byte, 4096), 0o644))
	}
	if _, err := OpenCache(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("stale %s kept", p)
		}
	}
	for _, p := range []string{live, entry} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

// An artifact that its format's reader cannot open is not published: the
// OUT already there stays as it was, and no temporary is left beside it.
func TestBrokenArtifactIsNotPublished(t *testing.T) {
	tmp := t.TempDir()
	from := filepath.Join(tmp, "built")
	copyFixture(t, from)
	must(t, os.Truncate(filepath.Join(from, "model.safetensors"), 1000))
	out := filepath.Join(tmp, "OUT")
	must(t, os.MkdirAll(out, 0o755))
	old := []byte(`{"schema":"edgectl.prep.manifest/v1","key":"` + strings.Repeat("a", 64) + `","files":[]}`)
	must(t, os.WriteFile(filepath.Join(out, artifact.ManifestName), old, 0o644))

	m := &artifact.Manifest{Schema: artifact.ManifestSchema, Target: TargetCPU, Key: strings.Repeat("b", 64)}
	_, err := writeOut(context.Background(), nil, from, out, m, true)
	if err == nil || !strings.Contains(err.Error(), "not loadable, OUT was left as it was") || !strings.Contains(err.Error(), filepath.Join(out, "model.safetensors")) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, artifact.ManifestName)); string(b) != string(old) {
		t.Error("the previous OUT was replaced by a broken one")
	}
	if left := temporaries(t, tmp); len(left) > 0 {
		t.Errorf("left beside OUT: %v", left)
	}
}
