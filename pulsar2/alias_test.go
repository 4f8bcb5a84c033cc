package pulsar2

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/internal/testbin"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/edgectl/edgectl/internal/pathguard"
)

// An output directory inside the model directory (however it is reached)
// or around it is refused before anything runs or is created.
func TestBuildRefusesOutputNestedWithTheModel(t *testing.T) {
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(model, alias); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(model)
	for _, out := range []string{model, alias, filepath.Join(model, "ax650"), filepath.Join(alias, "ax650"), filepath.Dir(model)} {
		_, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", DryRun: true})
		var pe *pathguard.Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "refusing to write -o ") {
			t.Errorf("-o %s: %v", out, err)
		}
	}
	if after, _ := os.ReadDir(model); len(after) != len(before) {
		t.Fatalf("refusals wrote into the model directory: %d → %d entries", len(before), len(after))
	}
}

// A killed build leaves its half output and shim directory beside OUT; the
// next build of the same OUT removes them, and its own shim carries the
// recognisable name.
func TestBuildRemovesStaleTemporaries(t *testing.T) {
	log := useFakeDocker(t, "pulsar2:5.2")
	model, _ := makeModel(t, modelSpec{layers: 2, hidden: 32, vocab: 6400})
	parent := t.TempDir()
	out := filepath.Join(parent, "o")
	pid := strconv.Itoa(testbin.DeadPID(t))
	for _, d := range []string{".o.edgectl-tmp-" + pid + "-1/layer", ".o.shim.edgectl-tmp-" + pid + "-2"} {
		if err := os.MkdirAll(filepath.Join(parent, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(parent, ".other.edgectl-tmp-"+pid+"-3")
	os.Mkdir(other, 0o755)
	if _, err := Build(context.Background(), BuildOptions{ModelDir: model, OutDir: out, Image: "pulsar2:5.2", Shim: ShimOptions{RelaxGroupN: true}}); err != nil {
		t.Fatal(err)
	}
	if !fileExists(filepath.Join(out, axllm.ConfigName)) {
		t.Fatal("no output")
	}
	os.Remove(other) // another output's orphan: not this build's to remove
	testbin.NoTemporaries(t, parent)
	calls := testbin.ReadJSONL[[]string](t, log)
	v := testbin.FlagValues(calls[len(calls)-1], "-v")
	if len(v) != 3 || !strings.Contains(v[2], "/.o.shim.edgectl-tmp-"+strconv.Itoa(os.Getpid())+"-") {
		t.Fatalf("shim mount %q lacks the temporary name", v)
	}
}

func TestPatchImageRefusesDSTThatIsSRC(t *testing.T) {
	dir := t.TempDir()
	tag, _ := name.NewTag("pulsar2:5.2")
	src := filepath.Join(dir, "ax_pulsar2_5.2.tar")
	if err := tarball.WriteToFile(src, tag, baseImage(t, true)); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(src)
	hard := filepath.Join(dir, "hard.tar")
	sym := filepath.Join(dir, "sym.tar")
	os.Link(src, hard)
	os.Symlink(src, sym)
	for _, dst := range []string{src, hard, sym, dir + "/../" + filepath.Base(dir) + "/ax_pulsar2_5.2.tar"} {
		_, err := PatchImage(context.Background(), src, dst, PatchOptions{})
		var pe *pathguard.Error
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "refusing to write "+dst+": it is the input file "+src) {
			t.Errorf("DST %s: %v", dst, err)
		}
	}
	if b, _ := os.ReadFile(src); !bytes.Equal(b, raw) {
		t.Fatal("source tarball modified")
	}
}

// The decompressed copy of a gzipped SRC carries the recognisable name,
// and one a killed run left in the temp directory is removed.
func TestPatchImageCleansStaleDecompressedCopy(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	tag, _ := name.NewTag("pulsar2:5.2")
	src := filepath.Join(dir, "img.tar")
	if err := tarball.WriteToFile(src, tag, baseImage(t, true)); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(src)
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(raw)
	zw.Close()
	gz := src + ".gz"
	os.WriteFile(gz, zb.Bytes(), 0o644)
	stale := filepath.Join(tmp, "."+gunzipName+".edgectl-tmp-"+strconv.Itoa(testbin.DeadPID(t))+"-9")
	os.WriteFile(stale, raw, 0o644)
	var logb bytes.Buffer
	if _, err := PatchImage(context.Background(), gz, filepath.Join(dir, "out.tar"), PatchOptions{Log: &logb}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logb.String(), filepath.Join(tmp, "."+gunzipName+".edgectl-tmp-"+strconv.Itoa(os.Getpid())+"-")) {
		t.Errorf("decompressed copy not named as a temporary: %s", logb.String())
	}
	if es, _ := os.ReadDir(tmp); len(es) != 0 {
		t.Fatalf("left in the temp directory: %v", es)
	}
}
