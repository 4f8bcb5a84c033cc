package quant

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/internal/progress"
)

// bareFile writes m's safetensors file alone in a directory: no
// config.json, no tokenizer.
func bareFile(t *testing.T, m *tinyModel) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.write(t), "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readTensor decodes GGUF tensor name as float32 with format/gguf (TQ
// types through this package's dequantizers).
func readTensor(t *testing.T, g *gguf.File, name string) (gguf.TensorInfo, []float32) {
	t.Helper()
	ti, ok := g.Tensor(name)
	if !ok {
		t.Fatalf("GGUF has no tensor %q", name)
	}
	b, err := g.Bytes(ti)
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float32, ti.Elements())
	k := int(ti.Ne[0])
	rb := int(ti.Type.RowSize(ti.Ne[0]))
	switch ti.Type {
	case gguf.TypeTQ2_0, gguf.TypeTQ1_0:
		for r := 0; r < len(y)/k; r++ {
			if ti.Type == gguf.TypeTQ2_0 {
				DequantizeRowTQ2_0(y[r*k:(r+1)*k], b[r*rb:])
			} else {
				DequantizeRowTQ1_0(y[r*k:(r+1)*k], b[r*rb:])
			}
		}
	default:
		if err := gguf.Dequantize(ti.Type, b, y); err != nil {
			t.Fatal(err)
		}
	}
	return ti, y
}

// TestPackBareSafetensors: a safetensors file without config.json packs to
// a tensors-only GGUF (no general.architecture, source names and shapes,
// values equal to the source's as each type stores them), with one
// warning, into an output directory that did not exist.
func TestPackBareSafetensors(t *testing.T) {
	m := newTiny("llama")
	m.extra = map[string][]int64{"model.layers.0.self_attn.rotary_emb.inv_freq": {32}, "extra.conv": {2, 3, 4}}
	in := bareFile(t, m)
	for _, format := range []string{FormatTQ2_0, FormatTQ1_0, FormatF16, FormatF32} {
		out := filepath.Join(t.TempDir(), "a", "b", "x.gguf") // a/b do not exist
		var events []string
		res, err := Pack(context.Background(), Options{Input: in, Output: out, Format: format, Threads: 2,
			OnEvent: func(e progress.Event) {
				if e.Event == progress.Warning {
					events = append(events, e.Message)
				}
			}})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if len(res.Warnings) != 1 || !slices.Equal(events, res.Warnings) ||
			!strings.Contains(res.Warnings[0], "no config.json") || !strings.Contains(res.Warnings[0], "cannot load it as a model") ||
			strings.Contains(res.Warnings[0], "\n") {
			t.Errorf("%s: warnings %q (events %q)", format, res.Warnings, events)
		}
		g, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		if g.Architecture() != "" {
			t.Errorf("%s: general.architecture = %q", format, g.Architecture())
		}
		if len(g.Tensors) != len(m.weights) {
			t.Errorf("%s: %d tensors, source has %d", format, len(g.Tensors), len(m.weights))
		}
		gt := ggufTypesOf(format)
		for name, src := range m.weights {
			ti, got := readTensor(t, g, name)
			shape := slices.Clone(m.shapes[name])
			slices.Reverse(shape)
			if !slices.Equal(ti.Ne, shape) {
				t.Errorf("%s %s: ne %v, source shape %v", format, name, ti.Ne, m.shapes[name])
			}
			want := slices.Clone(src)
			switch {
			case len(shape) != 2:
				if ti.Type != gguf.TypeF32 {
					t.Errorf("%s %s: %s, want F32", format, name, ti.Type)
				}
			case m.codes[name] != nil: // a projection
				if ti.Type != gt.proj {
					t.Errorf("%s %s: %s, want %s", format, name, ti.Type, gt.proj)
				}
				if gt.ternary() { // lossless up to fp16(α), and no Q/K permutation
					k := int(shape[0])
					for i := range want {
						want[i] = float32(m.codes[name][i]) * half.F16ToF32(half.F32ToF16(m.alpha[name][i/k]))
					}
				}
			default:
				if ti.Type != gt.mat {
					t.Errorf("%s %s: %s, want %s", format, name, ti.Type, gt.mat)
				}
			}
			if ti.Type == gguf.TypeF16 {
				for i, v := range want {
					want[i] = half.F16ToF32(half.F32ToF16(v))
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: values differ from the source", format, name)
			}
		}
		g.Close()
	}
}

// TestPackBareNeedsConfig: formats that need config.json refuse a bare
// file in one line naming it, and create no output directory.
func TestPackBareNeedsConfig(t *testing.T) {
	in := bareFile(t, newTiny("bitnet"))
	for _, format := range []string{FormatSherry, FormatHALO2, FormatTQ1H, FormatGPTQInt4} {
		root := t.TempDir()
		_, err := Pack(context.Background(), Options{Input: in, Output: filepath.Join(root, "sub", "out"), Format: format})
		if err == nil {
			t.Fatalf("%s: no error", format)
		}
		msg := err.Error()
		if !strings.Contains(msg, "no config.json") || !strings.Contains(msg, "--format "+format) || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q", format, msg)
		}
		if _, err := os.Stat(filepath.Join(root, "sub")); !os.IsNotExist(err) {
			t.Errorf("%s: output directory created on a refused run", format)
		}
	}
}

// TestPackIntoMissingDirectories: -o may name files below directories that
// do not exist yet, for the .h1b pair and the gptq-int4 directory too.
func TestPackIntoMissingDirectories(t *testing.T) {
	in := newTiny("bitnet").write(t)
	for _, c := range []struct{ format, out string }{
		{FormatSherry, filepath.Join("x", "y", "m.h1b")},
		{FormatGPTQInt4, filepath.Join("x", "y", "m-gptq")},
		{FormatTQ2_0, filepath.Join("x", "m.gguf")},
	} {
		out := filepath.Join(t.TempDir(), c.out)
		res, err := Pack(context.Background(), Options{Input: in, Output: out, Format: c.format, Threads: 2})
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		for _, f := range res.Files {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("%s: %v", c.format, err)
			}
		}
	}
}
