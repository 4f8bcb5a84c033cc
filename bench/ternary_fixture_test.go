package bench

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/quant"
)

// The ternary-trained fixtures (scripts/train-ternary.py, `make
// ternary-fixture`): BitNet b1.58 models trained ternary from the start on
// text sampled from TinyStories-656K, each with its eval text and the
// script's own float64 perplexity of it (reference.json).
var ternaryFixtures = []struct {
	dir string
	// sherryLossless: trained with the 3:4 projection, so Sherry's packing
	// keeps every weight; the absmean-trained model loses some to it.
	sherryLossless bool
}{
	{"../testdata/models/bitnet-ternary-tiny", false},
	{"../testdata/models/bitnet-sherry-tiny", true},
}

// ternaryReference is reference.json: what the script computed, for the
// whole eval text and for its first stories (Prefix.Bytes of it).
type ternaryReference struct {
	EvalText string `json:"eval_text"`
	Context  int    `json:"context"`
	ternaryScore
	Prefix struct {
		Bytes int `json:"bytes"`
		ternaryScore
	} `json:"prefix"`
}

type ternaryScore struct {
	Tokens     int     `json:"tokens"`
	Windows    int     `json:"windows"`
	Perplexity float64 `json:"perplexity"`
}

// Every packed format of a ternary-trained model, scored by the engine as
// `edgectl bench --perplexity` does: the formats that keep every ternary
// weight (the checkpoint ternarized at load, HALO_V2, base-3 .h1b, TQ2_0,
// TQ1_0; Sherry too for the Sherry-trained model) agree with the script's
// independent float64 perplexity to 0.1% and with each other to 1e-4 (the
// GGUF types hold the scale as fp16), with the exact head; so does the F16
// GGUF, whose projections quant writes ternarized, to 0.1%; the Sherry
// packing of the absmean-trained model, whose 3:4 projection changes
// weights, is measurably worse. The default 4-bit head (q4x) is reported
// beside the exact one and stays within 1% of it. The checkpoint scores
// the whole eval text; every format, to stay fast, its first stories.
func TestTernaryFixturePerplexityPerFormat(t *testing.T) {
	ctx := context.Background()
	for _, fx := range ternaryFixtures {
		t.Run(filepath.Base(fx.dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(fx.dir, "reference.json"))
			if os.IsNotExist(err) {
				t.Skipf("%s is not here: `make ternary-fixture` trains it", fx.dir)
			}
			if err != nil {
				t.Fatal(err)
			}
			var ref ternaryReference
			if err := json.Unmarshal(raw, &ref); err != nil {
				t.Fatalf("%s/reference.json: %v", fx.dir, err)
			}
			tmp := t.TempDir()
			eval := filepath.Join(fx.dir, ref.EvalText)
			text, err := os.ReadFile(eval)
			if err != nil {
				t.Fatal(err)
			}
			if ref.Prefix.Bytes <= 0 || ref.Prefix.Bytes > len(text) {
				t.Fatalf("%s/reference.json: prefix.bytes %d outside the eval text's %d bytes (run the script with --reference-only)", fx.dir, ref.Prefix.Bytes, len(text))
			}
			prefix := filepath.Join(tmp, "prefix.txt")
			if err := os.WriteFile(prefix, text[:ref.Prefix.Bytes], 0o644); err != nil {
				t.Fatal(err)
			}
			type model struct {
				name, path string
				lossless   bool
				// agree: how close to the checkpoint's perplexity; F16
				// runs float products, without the int8 activations
				agree float64
			}
			models := []model{{"checkpoint", fx.dir, true, 0}}
			for _, f := range []struct{ format, ext string }{
				{quant.FormatTQ2_0, ".gguf"}, {quant.FormatTQ1_0, ".gguf"}, {quant.FormatF16, ".gguf"},
				{quant.FormatHALO2, ".h1b"}, {quant.FormatTQ1H, ".h1b"}, {quant.FormatSherry, ".h1b"},
			} {
				out := filepath.Join(tmp, "model."+f.format+f.ext)
				if _, err := quant.Pack(ctx, quant.Options{Input: fx.dir, Output: out, Format: f.format, Threads: 2}); err != nil {
					t.Fatalf("quant pack --format %s: %v", f.format, err)
				}
				agree := 1e-4
				if f.format == quant.FormatF16 {
					agree = 1e-3
				}
				models = append(models, model{f.format, out, f.format != quant.FormatSherry || fx.sherryLossless, agree})
			}
			ppl := func(path, file, head string, want ternaryScore) float64 {
				t.Helper()
				rep, err := Perplexity(ctx, path, file, Options{Threads: 2, Context: ref.Context, Head: head})
				if err != nil {
					t.Fatalf("%s, head %s: %v", path, head, err)
				}
				if rep.Tokens != want.Tokens || rep.Windows != want.Windows {
					t.Errorf("%s: %d tokens in %d windows, the script scored %d in %d (the tokenizers disagree)", path, rep.Tokens, rep.Windows, want.Tokens, want.Windows)
				}
				return rep.Perplexity
			}
			full := ppl(fx.dir, eval, "float", ref.ternaryScore)
			t.Logf("whole eval text, checkpoint: perplexity %.5f (exact head), float64 reference %.5f", full, ref.Perplexity)
			if e := math.Abs(full-ref.Perplexity) / ref.Perplexity; !(e < 1e-3) {
				t.Errorf("checkpoint, whole eval text: perplexity %.5f, float64 reference %.5f (relative error %.3g, over 0.1%%)", full, ref.Perplexity, e)
			}
			want := ref.Prefix.ternaryScore
			var base float64
			for _, m := range models {
				exact, q4x := ppl(m.path, prefix, "float", want), ppl(m.path, prefix, "q4x", want)
				vsRef := (exact - want.Perplexity) / want.Perplexity
				t.Logf("%-10s perplexity %.4f (exact head), %.4f (q4x head); float64 reference %.4f (%+.2e)", m.name, exact, q4x, want.Perplexity, vsRef)
				if e := math.Abs(q4x-exact) / exact; !(e < 0.01) {
					t.Errorf("%s: the q4x head's perplexity %.4f is %.2g from the exact head's %.4f (over 1%%)", m.name, q4x, e, exact)
				}
				if m.name == "checkpoint" {
					base = exact
				}
				if !m.lossless {
					if d := (exact - base) / base; !(d > 0.01) {
						t.Errorf("%s of a model not trained 3:4: perplexity %.4f, only %+.2g from the lossless packings' %.4f; the projection should cost more", m.name, exact, d, base)
					}
					continue
				}
				if e := math.Abs(vsRef); !(e < 1e-3) {
					t.Errorf("%s: perplexity %.5f, float64 reference %.5f (relative error %.3g, over 0.1%%)", m.name, exact, want.Perplexity, e)
				}
				if e := math.Abs(exact-base) / base; m.agree > 0 && !(e < m.agree) {
					t.Errorf("%s: perplexity %.6f differs from the checkpoint's %.6f by %.3g, over %g (lossless packings should agree to rounding)", m.name, exact, base, e, m.agree)
				}
			}
		})
	}
}
