package cpu

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/safetensors"
)

// tinyStoriesW256 is TinyStories zero-padded to width 256 (../shared):
// every matrix is whole four-row panels and whole vectors, where the
// checkpoint in testdata (width 128, FFN 344, head 2048) is not all so.
const tinyStoriesW256 = "../../../shared/fixtures/tinystories-656k-w256"

// writeAsDtype copies the checkpoint in src to a new directory with every
// tensor stored in dt (F16, BF16: rounded), beside its config and
// tokenizer.
func writeAsDtype(t *testing.T, src string, dt safetensors.DType) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
		copyFile(t, filepath.Join(src, f), filepath.Join(dir, f))
	}
	in, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	must(t, err)
	defer in.Close()
	var srcs []safetensors.Source
	for _, ts := range in.Tensors {
		v, err := in.Float32(ts)
		must(t, err)
		raw := make([]byte, dt.ByteSize(int64(len(v))))
		must(t, safetensors.EncodeFloat32(raw, dt, v))
		srcs = append(srcs, safetensors.Source{Name: ts.Name, DType: dt, Shape: ts.Shape, WriteTo: safetensors.FromBytes(raw)})
	}
	must(t, writeFile(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error { return safetensors.Write(w, nil, srcs) }))
	return dir
}

// TestGemmPrefillMatchesDotPath runs real checkpoints (TinyStories, in
// testdata and padded to width 256 in ../shared) stored as F32, F16 and
// BF16 through prefill with the host table and with the same table less
// its gemm kernels (the per-pair dot path prefill ran before): the last
// token's logits agree to rounding (max relative error 1e-4, as the
// float64 reference tests allow) and greedy generation after a
// multi-token prompt gives the same text.
func TestGemmPrefillMatchesDotPath(t *testing.T) {
	srcs := []string{tinyStories, tinyStoriesW256}
	if _, err := os.Stat(tinyStoriesW256); err != nil {
		t.Logf("%s absent (../shared not beside the repo): testdata's checkpoint only", tinyStoriesW256)
		srcs = srcs[:1]
	}
	// 65 tokens: past one 64-token chunk (generate splits it), and a
	// token count off the panels' main block.
	const prompt = "Once upon a time, there was a little girl named Lily. She liked to play with her red ball in the park near her house. " +
		"One day, she saw a big dog with a long tail. The dog wanted to play too, so Lily threw the ball and the dog ran after it. " +
		"They played all day until the sun went down. Lily was tired but happy, and she went home to tell her mom about her new friend"
	for _, src := range srcs {
		for _, dt := range []safetensors.DType{safetensors.F32, safetensors.F16, safetensors.BF16} {
			t.Run(filepath.Base(src)+"/"+string(dt), func(t *testing.T) {
				dir := src
				if dt != safetensors.F32 {
					dir = writeAsDtype(t, src, dt)
				}
				m := loadModel(t, dir)
				if f := m.w.layers[0].gate.format(); f != string(dt) {
					t.Fatalf("gate loaded as %s, want %s as stored", f, dt)
				}
				gemm := m.kern
				dot := *gemm
				dot.gemm = floatGemm{}
				ids := m.tok.Encode(prompt, true)
				logits := func(k *kernels) []float32 {
					st := newState(m)
					st.a.kern, st.b.kern = k, k
					l, err := st.forward(context.Background(), ids)
					must(t, err)
					return append([]float32(nil), l...)
				}
				want := logits(&dot)
				want64 := make([]float64, len(want))
				for i, v := range want {
					want64[i] = float64(v)
				}
				e := maxRelErr(logits(gemm), want64)
				if e > 1e-4 {
					t.Errorf("%d-token prefill: logits max relative error %.3g against the dot path", len(ids), e)
				}
				t.Logf("%d-token prefill, table %s: logits max relative error %.2g against the dot path", len(ids), gemm.name, e)
				req := engine.Request{Prompt: prompt, MaxTokens: 30, Sampling: greedy()}
				got, _ := generate(t, m, req)
				m.kern = &dot
				before, _ := generate(t, m, req)
				m.kern = gemm
				if got != before {
					t.Errorf("greedy text with gemm %q, dot path %q", got, before)
				}
			})
		}
	}
}
