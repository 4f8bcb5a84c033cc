package cpu

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/h1b"
	"github.com/edgectl/edgectl/format/tokjson"
	"github.com/edgectl/edgectl/quant"
)

const qwenTok = "../../testdata/models/qwen3-tokenizer"

// TestBitNetSameTokensInEveryFormat runs one generated BitNet model from
// its float safetensors and from GGUF TQ1_0/TQ2_0 and .h1b HALO_V2/Sherry/
// base-3: the greedy tokens must be identical.
func TestBitNetSameTokensInEveryFormat(t *testing.T) {
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 2, heads: 4, kv: 2, vocab: 6400, seed: 1}
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyFile(t, filepath.Join(qwenTok, f), filepath.Join(dir, f))
	}
	paths := map[string]string{
		"safetensors": dir,
		"TQ2_0":       filepath.Join(dir, "m-tq2.gguf"),
		"TQ1_0":       filepath.Join(dir, "m-tq1.gguf"),
		"halo2":       filepath.Join(dir, "m-halo2.h1b"),
		"sherry":      filepath.Join(dir, "m-sherry.h1b"),
		"tq1h":        filepath.Join(dir, "m-tq1h.h1b"),
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(spec.writeSafetensors(dir))
	must(spec.writeGGUF(paths["TQ2_0"], gguf.TypeTQ2_0))
	must(spec.writeGGUF(paths["TQ1_0"], gguf.TypeTQ1_0))
	must(spec.writeH1B(paths["halo2"], h1b.V2HALO2))
	must(spec.writeH1B(paths["sherry"], h1b.V3Sherry))
	must(spec.writeH1B(paths["tq1h"], h1b.V4TQ1))

	var want []int
	for _, name := range []string{"safetensors", "TQ2_0", "TQ1_0", "halo2", "sherry", "tq1h"} {
		m := loadModel(t, paths[name])
		if m.arch.name != "bitnet" || !m.arch.relu2 || !m.arch.subNorm {
			t.Fatalf("%s: loaded as %+v", name, m.arch)
		}
		if name != "safetensors" && m.info.Quantization != name {
			t.Errorf("%s: quantization reported as %q", name, m.info.Quantization)
		}
		// The default 4-bit head (q4x) was built from the tied embedding
		// and its mapped pages dropped; the lookups below and the
		// candidates' re-scoring read them back from the file.
		if e, isFloat := m.w.embed.(*floatRows); !isFloat || e.release == nil {
			t.Fatalf("%s: embedding %T without a release hook", name, m.w.embed)
		}
		if _, ok := m.w.head.(*quantLinear); !ok || m.w.exact == nil || m.w.exact.f != m.w.embed {
			t.Fatalf("%s: head %T, exact candidates %v", name, m.w.head, m.w.exact)
		}
		var ids []int
		s, _ := m.NewSession()
		_, err := s.Generate(t.Context(), engine.Request{Prompt: "The quick brown fox", MaxTokens: 12, Sampling: greedy()},
			func(tk engine.Token) error { ids = append(ids, tk.ID); return nil })
		must(err)
		if want == nil {
			t.Logf("greedy tokens: %v", ids)
			if distinct(ids) < 3 {
				t.Fatalf("degenerate output %v: the test would not tell formats apart", ids)
			}
			want = ids
			if len(ids) < 12 {
				t.Fatalf("only %d tokens", len(ids))
			}
			continue
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s: greedy tokens %v, safetensors gave %v", name, ids, want)
		}
	}
}

func distinct(ids []int) int {
	seen := map[int]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	return len(seen)
}

// TestH1BWithHTokSidecar loads a .h1b whose only tokenizer is the .htok
// sidecar beside it.
func TestH1BWithHTokSidecar(t *testing.T) {
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 1, heads: 4, kv: 2, vocab: 6400, seed: 3}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.h1b")
	must(t, spec.writeH1B(path, h1b.V3Sherry))
	f, err := tokjson.Load(qwenTok)
	must(t, err)
	toks := f.Tokens()
	id := func(s string) uint32 { return uint32(f.Model.Vocab[s]) }
	ht := &h1b.Tokenizer{Tokens: toks, BOS: 1, EOS: 2}
	for _, mg := range f.Model.Merges {
		ht.Merges = append(ht.Merges, [3]uint32{id(mg[0]), id(mg[1]), id(mg[0] + mg[1])})
	}
	must(t, writeFile(filepath.Join(dir, "m.htok"), func(w io.Writer) error { _, err := ht.WriteTo(w); return err }))
	m := loadModel(t, path)
	if m.tok == nil || !slices.Contains(m.arch.eos, 2) {
		t.Fatalf("tokenizer not loaded from the sidecar (eos %v)", m.arch.eos)
	}
	_, res := generate(t, m, engine.Request{Prompt: "Hello world!", MaxTokens: 3, Sampling: greedy()})
	// BOS + "Hello", " world", "!" (ids from testdata/bpe_ref.py).
	if res.PromptTokens != 4 || res.CompletionTokens == 0 {
		t.Fatalf("%+v", res)
	}
}

// TestUnsupportedInputsAreClearErrors: wrong shapes and formats the engine
// cannot run give one-line errors that say what and where.
func TestUnsupportedInputsAreClearErrors(t *testing.T) {
	dir := t.TempDir()
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 1, heads: 4, kv: 2, vocab: 6400, seed: 3}
	must(t, spec.writeSafetensors(dir))
	// config.json claims a different hidden size than the tensors have.
	cfgPath := filepath.Join(dir, "config.json")
	b, _ := os.ReadFile(cfgPath)
	must(t, os.WriteFile(cfgPath, []byte(strings.Replace(string(b), `"hidden_size": 256`, `"hidden_size": 512`, 1)), 0o644))
	_, err := New().Load(t.Context(), dir, engine.LoadOptions{})
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "model.embed_tokens.weight") || !strings.Contains(err.Error(), "shape") {
		t.Errorf("shape mismatch: %v", err)
	}
	must(t, os.WriteFile(cfgPath, []byte(strings.Replace(string(b), `"bitnet"`, `"gpt_neox"`, 1)), 0o644))
	if _, err := New().Load(t.Context(), dir, engine.LoadOptions{}); !errors.Is(err, engine.ErrUnsupported) || !strings.Contains(err.Error(), "gpt_neox") {
		t.Errorf("model_type: %v", err)
	}
	if _, err := New().Load(t.Context(), filepath.Join(dir, "config.json"), engine.LoadOptions{}); !errors.Is(err, engine.ErrUnsupported) {
		t.Errorf("plain file: %v", err)
	}
	bad := filepath.Join(dir, "bad.h1b")
	must(t, os.WriteFile(bad, []byte("H1B\x00\x02\x00\x00\x00"), 0o644))
	if _, err := New().Load(t.Context(), bad, engine.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "bad.h1b") {
		t.Errorf("truncated h1b: %v", err)
	}
}

// TestQuantPackOutputsRun packs the float BitNet checkpoint with the real
// `quant pack` pipeline (quant.Pack) into every ternary format and checks
// the engine gives the float checkpoint's greedy tokens from each file, and
// TinyStories packed to GGUF F32 by the same pipeline its text.
func TestQuantPackOutputsRun(t *testing.T) {
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 2, heads: 4, kv: 2, vocab: 6400, seed: 1}
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyFile(t, filepath.Join(qwenTok, f), filepath.Join(dir, f))
	}
	must(t, spec.writeSafetensors(dir))
	req := engine.Request{Prompt: "The quick brown fox", MaxTokens: 12, Sampling: greedy()}
	want, _ := generate(t, loadModel(t, dir), req)
	for _, format := range []string{quant.FormatTQ2_0, quant.FormatTQ1_0, quant.FormatHALO2, quant.FormatSherry, quant.FormatTQ1H} {
		ext := ".gguf"
		if format == quant.FormatHALO2 || format == quant.FormatSherry || format == quant.FormatTQ1H {
			ext = ".h1b"
		}
		out := filepath.Join(dir, "packed-"+format+ext)
		if _, err := quant.Pack(t.Context(), quant.Options{Input: dir, Output: out, Format: format}); err != nil {
			t.Fatalf("quant pack %s: %v", format, err)
		}
		got, _ := generate(t, loadModel(t, out), req)
		if got != want {
			t.Errorf("%s packed by quant.Pack: %q, float checkpoint %q", format, got, want)
		}
	}
	out := filepath.Join(t.TempDir(), "ts.gguf")
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyFile(t, filepath.Join(tinyStories, f), filepath.Join(filepath.Dir(out), f))
	}
	if _, err := quant.Pack(t.Context(), quant.Options{Input: tinyStories, Output: out, Format: quant.FormatF32}); err != nil {
		t.Fatalf("quant pack f32: %v", err)
	}
	a, _ := generate(t, loadModel(t, tinyStories), engine.Request{Prompt: "Once upon a time", MaxTokens: 30, Sampling: greedy()})
	b, _ := generate(t, loadModel(t, out), engine.Request{Prompt: "Once upon a time", MaxTokens: 30, Sampling: greedy()})
	if a != b {
		t.Errorf("TinyStories via quant pack GGUF F32: %q, checkpoint %q", b, a)
	}
}

// TestGGUFEmbeddedTokenizer: a .gguf from quant pack with no tokenizer.json
// beside it tokenizes from its tokenizer.ggml.* metadata exactly as the
// tokenizer.json it came from (byte-level Qwen vocabulary; SentencePiece-
// style TinyStories vocabulary).
func TestGGUFEmbeddedTokenizer(t *testing.T) {
	texts := []string{"Once upon a time, there was a little girl named Lily.", "He said: \"Hello!\" and ran away."}
	for _, c := range []struct{ name, src, tok, format string }{
		{"tinystories", tinyStories, tinyStories, quant.FormatF32},
	} {
		out := filepath.Join(t.TempDir(), c.name+".gguf") // no tokenizer.json here
		if _, err := quant.Pack(t.Context(), quant.Options{Input: c.src, Output: out, Format: c.format}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(out), "tokenizer.json")); err == nil {
			t.Fatal("tokenizer.json beside the output: the test would not use the GGUF metadata")
		}
		g := loadModel(t, out)
		ref := loadModel(t, c.src)
		if g.tok == nil {
			t.Fatalf("%s: no tokenizer from GGUF metadata", c.name)
		}
		for _, s := range texts {
			a, b := g.tok.Encode(s, true), ref.tok.Encode(s, true)
			if !slices.Equal(a, b) {
				t.Errorf("%s %q: gguf %v, tokenizer.json %v", c.name, s, a, b)
			}
			if got := g.tok.Decode(a); got != s {
				t.Errorf("%s: decode %q", c.name, got)
			}
		}
	}
	// Byte-level: the BitNet test model with the Qwen vocabulary.
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 1, heads: 4, kv: 2, vocab: 6400, seed: 4}
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyFile(t, filepath.Join(qwenTok, f), filepath.Join(dir, f))
	}
	must(t, spec.writeSafetensors(dir))
	out := filepath.Join(t.TempDir(), "q.gguf")
	if _, err := quant.Pack(t.Context(), quant.Options{Input: dir, Output: out, Format: quant.FormatTQ2_0}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "tokenizer.json")); err == nil {
		t.Fatal("tokenizer.json beside the output")
	}
	g, ref := loadModel(t, out), loadModel(t, dir)
	for _, s := range []string{"Hello world!", "The quick brown fox jumps over the lazy dog.", "naïve café <|im_start|>user"} {
		if a, b := g.tok.Encode(s, false), ref.tok.Encode(s, false); !slices.Equal(a, b) {
			t.Errorf("byte-level %q: gguf %v, tokenizer.json %v", s, a, b)
		}
	}
}
