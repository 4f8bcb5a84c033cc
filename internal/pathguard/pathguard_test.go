package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/errkind"
)

// model builds DIR/model.safetensors and DIR/config.json, an alias of DIR
// through a symlink, and returns (root, DIR, alias).
func model(t *testing.T) (string, string, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("weights"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644))
	alias := filepath.Join(root, "alias")
	must(t, os.Symlink(dir, alias))
	return root, dir, alias
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantRefusal(t *testing.T, err error, parts ...string) {
	t.Helper()
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("got %v, want a refusal", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "refusing to write -o ") || strings.Contains(msg, "\n") || !errors.Is(err, errkind.Usage) {
		t.Errorf("message %q (kind %v)", msg, errkind.Of(err))
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("%q lacks %q", msg, p)
		}
	}
}

func TestFileRefusesEveryAliasOfAnInput(t *testing.T) {
	root, dir, alias := model(t)
	weights := filepath.Join(dir, "model.safetensors")
	inputs := []string{weights, filepath.Join(dir, "config.json")}

	wantRefusal(t, File(weights, inputs...), "it is the input file "+weights, "(same file)")
	wantRefusal(t, File(filepath.Join(dir, "sub", "..", "model.safetensors"), inputs...), "(same file)")
	wantRefusal(t, File(filepath.Join(alias, "model.safetensors"), inputs...), "through a symlinked directory")
	link := filepath.Join(root, "link.safetensors")
	must(t, os.Symlink(weights, link))
	wantRefusal(t, File(link, inputs...), "through a symlink)")
	hard := filepath.Join(root, "hard.safetensors")
	must(t, os.Link(weights, hard))
	wantRefusal(t, File(hard, inputs...), "a hard link")
	wantRefusal(t, File(alias, dir), "it is the input directory")

	// New names — beside the input, even inside the model directory — and
	// outputs that replace files nobody reads are fine.
	must(t, os.WriteFile(filepath.Join(dir, "old.gguf"), []byte("previous run"), 0o644))
	for _, ok := range []string{filepath.Join(dir, "model.gguf"), filepath.Join(alias, "old.gguf"), filepath.Join(root, "out.gguf")} {
		if err := File(ok, inputs...); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	if err := File(filepath.Join(root, "x"), filepath.Join(root, "missing")); err != nil {
		t.Errorf("missing input: %v", err)
	}
}

func TestDirRefusesNesting(t *testing.T) {
	root, dir, alias := model(t)
	weights := filepath.Join(dir, "model.safetensors")

	wantRefusal(t, Dir(dir, dir), "it is the input directory")
	wantRefusal(t, Dir(alias, dir), "it is the input directory")
	wantRefusal(t, Dir(filepath.Join(dir, "out"), dir), "it lies inside the input directory "+dir)
	wantRefusal(t, Dir(filepath.Join(alias, "sub", "new", "out"), dir), "lies inside")
	wantRefusal(t, Dir(root, dir), "it contains the input "+dir)
	wantRefusal(t, Dir(root, weights), "it contains the input "+weights)
	// An output reached through a symlink that points into the input.
	into := filepath.Join(root, "into")
	must(t, os.Symlink(filepath.Join(dir, "sub"), into))
	wantRefusal(t, Dir(filepath.Join(into, "out"), dir), "lies inside")

	// A sibling, and a directory inside the input's parent, are fine; so is
	// a new directory beside an input file (its directory is not an input).
	for _, ok := range []string{filepath.Join(root, "out"), filepath.Join(root, "a", "b")} {
		if err := Dir(ok, dir, weights); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	if err := Dir(filepath.Join(dir, "gptq"), weights); err != nil {
		t.Errorf("new directory beside an input file refused: %v", err)
	}
	// A symlink inside the input pointing out of it: the output's real
	// place is outside.
	out := filepath.Join(root, "elsewhere")
	must(t, os.Mkdir(out, 0o755))
	must(t, os.Symlink(out, filepath.Join(dir, "escape")))
	if err := Dir(filepath.Join(dir, "escape", "new"), dir); err != nil {
		t.Errorf("output whose real place is outside refused: %v", err)
	}
}
