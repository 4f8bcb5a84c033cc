package cpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// BenchmarkEmbedMiniLMBatch embeds requests of 64 inputs of 16, 64 and
// 128 tokens through the MiniLM-shaped GGUF (bert_peer_bench_test.go),
// packed (the engine's budget) and one input at a time (a budget of 0),
// on benchThreads threads (EDGECTL_BENCH_THREADS overrides), in
// embeddings/s. EDGECTL_PACK_TOKENS sets the packed runs' budget.
//
//	go test -run '^$' -bench EmbedMiniLMBatch ./engine/cpu
func BenchmarkEmbedMiniLMBatch(b *testing.B) {
	p := miniLMGGUF(b)
	threads := embedBenchThreads()
	budget := embedPackTokens
	if v, err := strconv.Atoi(os.Getenv("EDGECTL_PACK_TOKENS")); err == nil && v > 0 {
		budget = v
	}
	m, err := New().Load(context.Background(), p, engine.LoadOptions{Threads: threads, ContextLength: miniLM.MaxPos})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	bm := m.(*bertModel)
	vocab := len(miniLM.BertVocab())
	b.Logf("%s: %d threads, pack budget %d tokens, load average %s", filepath.Base(p), threads, budget, loadAvg())
	for _, tokens := range []int{16, 64, 128} {
		var req engine.EmbedRequest
		for i := range 64 {
			req.Inputs = append(req.Inputs, engine.EmbedInput{Tokens: packIDs(tokens-2, i, vocab)})
		}
		for _, mode := range []struct {
			name   string
			budget int
		}{{"packed", budget}, {"alone", 0}} {
			b.Run(fmt.Sprintf("tokens=%d/%s", tokens, mode.name), func(b *testing.B) {
				bm.packTokens = mode.budget
				for b.Loop() {
					if _, err := bm.Embed(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*len(req.Inputs))/b.Elapsed().Seconds(), "embeddings/s")
			})
		}
	}
}
