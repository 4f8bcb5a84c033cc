package cpu

import (
	"context"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// BenchmarkEmbedMiniLM embeds one 128-token input at a time with a
// MiniLM-shaped encoder (all-MiniLM-L6-v2: 6 layers, hidden 384, 12 heads,
// FFN 1536, 512 positions; random weights), reporting embeddings/s.
//
//	go test -run '^$' -bench EmbedMiniLM ./engine/cpu
func BenchmarkEmbedMiniLM(b *testing.B) {
	dir := b.TempDir()
	spec := testmodel.BertSpec{Hidden: 384, FFN: 1536, Layers: 6, Heads: 12, MaxPos: 512,
		Words: []string{"edge", "device", "vector"}, NoTokenizer: true, Seed: 1}
	if err := testmodel.WriteBert(dir, spec); err != nil {
		b.Fatal(err)
	}
	m, err := New().Load(context.Background(), dir, engine.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ids := make([]int, 128)
	for i := range ids {
		ids[i] = 5 + i%(len(spec.BertVocab())-5)
	}
	ids[0], ids[127] = testmodel.BertCLS, testmodel.BertSEP
	req := engine.EmbedRequest{Inputs: []engine.EmbedInput{{Tokens: ids}}}
	emb := m.(engine.Embedder)
	b.ResetTimer()
	for b.Loop() {
		if _, err := emb.Embed(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "embeddings/s")
}
