package quant

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/pathguard"
)

// Outputs that are an input — the same path, through a symlinked alias of
// the model directory, a symlink, a hard link, or through the .htok
// sidecar — are refused before anything is written; new names inside the
// model directory are fine.
func TestPackNeverOverwritesAnInput(t *testing.T) {
	in := newTiny("bitnet").write(t)
	weights := filepath.Join(in, "model.safetensors")
	orig, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	alias := filepath.Join(root, "alias")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(in, alias))
	must(os.Link(weights, filepath.Join(root, "hard.safetensors")))
	must(os.Symlink(weights, filepath.Join(root, "sym.gguf")))
	must(os.Symlink(filepath.Join(in, "config.json"), filepath.Join(root, "side.htok")))

	cases := []struct{ input, out, format, want string }{
		{in, weights, FormatTQ2_0, "(same file)"},
		{in, filepath.Join(alias, "model.safetensors"), FormatTQ2_0, "through a symlinked directory"},
		{alias, weights, FormatTQ1_0, "same file"},
		{weights, filepath.Join(root, "hard.safetensors"), FormatF16, "a hard link"},
		{in, filepath.Join(root, "sym.gguf"), FormatTQ2_0, "through a symlink)"},
		{in, filepath.Join(in, "config.json"), FormatSherry, "it is the input file " + filepath.Join(in, "config.json")},
		{in, filepath.Join(root, "side.h1b"), FormatSherry, "it is the input file " + filepath.Join(in, "config.json")},
		{in, filepath.Join(in, "gptq"), FormatGPTQInt4, "it lies inside the input directory"},
		{in, filepath.Join(alias, "gptq"), FormatGPTQInt4, "it lies inside the input directory"},
		{in, in, FormatGPTQInt4, "it is the input directory"},
	}
	for _, c := range cases {
		_, err := Pack(context.Background(), Options{Input: c.input, Output: c.out, Format: c.format, Threads: 2})
		var pe *pathguard.Error
		named := c.out
		if strings.HasSuffix(c.out, "side.h1b") {
			named = htokPath(c.out) // the sidecar is what collides
		}
		if !errors.As(err, &pe) || !errors.Is(err, errkind.Usage) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "refusing to write -o "+named+": ") {
			t.Errorf("-o %s (%s): %v; want a refusal saying %q", c.out, c.format, err, c.want)
		}
	}
	if b, _ := os.ReadFile(weights); !bytes.Equal(b, orig) {
		t.Fatal("input weights modified")
	}
	// A new file in the model directory is allowed, and so is replacing it
	// on the next run: it is an output, not an input.
	out := filepath.Join(alias, "model.gguf")
	for range 2 {
		if _, err := Pack(context.Background(), Options{Input: in, Output: out, Format: FormatTQ2_0, Threads: 2}); err != nil {
			t.Fatalf("new file in the model directory: %v", err)
		}
	}
	if b, _ := os.ReadFile(weights); !bytes.Equal(b, orig) {
		t.Fatal("input weights modified")
	}
}
