package cpu

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// miniLM is all-MiniLM-L6-v2's shape (6 layers, hidden 384, 12 heads, FFN
// 1536, 512 positions) with random weights and a small WordPiece
// vocabulary, mean-pooled; the token table's size does not change the
// time of an embedding (one row read per token).
var miniLM = testmodel.BertSpec{Hidden: 384, FFN: 1536, Layers: 6, Heads: 12, MaxPos: 512,
	Words: []string{"edge", "device", "vector"}, Seed: 1}

// miniLMGGUF returns the cached MiniLM-shaped GGUF that
// scripts/bench-embed-llamacpp.sh also hands to llama.cpp, writing it on
// first use (F32, 90 MB).
func miniLMGGUF(b *testing.B) string {
	dir := filepath.Join(os.TempDir(), "edgectl-bench", benchVersion)
	p := filepath.Join(dir, "minilm-l6-f32.gguf")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	spec := miniLM
	spec.GGUF = p + ".tmp"
	if err := testmodel.WriteBert(b.TempDir(), spec); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(spec.GGUF, p); err != nil {
		b.Fatal(err)
	}
	return p
}

// embedBenchThreads is benchThreads, or EDGECTL_BENCH_THREADS: the
// script's THREADS=1 run, which a shared host's other load disturbs less
// than two threads meeting at every product (llama.cpp's spinning barrier
// most of all).
func embedBenchThreads() int {
	if v, err := strconv.Atoi(os.Getenv("EDGECTL_BENCH_THREADS")); err == nil && v > 0 {
		return v
	}
	return benchThreads
}

// miniLMInput is the benchmark's one input: 128 token ids, [CLS] … [SEP].
// scripts/llamacpp-peer/embed.mjs builds the same ids.
func miniLMInput() []int {
	n := len(miniLM.BertVocab())
	ids := make([]int, 128)
	for i := range ids {
		ids[i] = 5 + i%(n-5)
	}
	ids[0], ids[127] = testmodel.BertCLS, testmodel.BertSEP
	return ids
}

// BenchmarkEmbedMiniLMGGUF is the engine's side of make
// bench-embed-llamacpp: one 128-token input at a time through the
// MiniLM-shaped GGUF on benchThreads threads, in embeddings/s. With
// EDGECTL_PEER_VECTOR naming llama.cpp's vector for the same ids (a JSON
// array, written by embed.mjs) it also reports the cosine between the
// two, which says both sides computed the same embedding.
//
//	go test -run '^$' -bench EmbedMiniLMGGUF ./engine/cpu
func BenchmarkEmbedMiniLMGGUF(b *testing.B) {
	p := miniLMGGUF(b)
	threads := embedBenchThreads()
	m, err := New().Load(context.Background(), p, engine.LoadOptions{Threads: threads, ContextLength: miniLM.MaxPos})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	req := engine.EmbedRequest{Inputs: []engine.EmbedInput{{Tokens: miniLMInput()}}}
	emb := m.(engine.Embedder)
	b.Logf("%s: %d threads, load average %s", filepath.Base(p), threads, loadAvg())
	var res engine.EmbedResult
	b.ResetTimer()
	for b.Loop() {
		if res, err = emb.Embed(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "embeddings/s")
	if f := os.Getenv("EDGECTL_PEER_VECTOR"); f != "" {
		var peer []float64
		if raw, err := os.ReadFile(f); err != nil || json.Unmarshal(raw, &peer) != nil || len(peer) != len(res.Embeddings[0]) {
			b.Fatalf("EDGECTL_PEER_VECTOR=%s: want a JSON array of %d numbers (%v)", f, len(res.Embeddings[0]), err)
		}
		b.ReportMetric(cosine64(res.Embeddings[0], peer), "cosine-to-peer")
	}
}
