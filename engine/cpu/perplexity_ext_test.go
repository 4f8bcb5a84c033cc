package cpu_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/bench"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
)

const tinyStoriesDir = "../../testdata/models/tinystories-656k"

const story = `Once upon a time, there was a little boy named Tim. Tim had a big red truck that he loved very much. Every day, he would push the truck around the garden and make loud noises. One day, the truck got stuck in the mud near the pond. Tim pulled and pulled, but it would not move. His sister Sue came to help. Together they pushed the truck out of the mud, and it was dirty but fine. They washed it with water from the pond and laughed. Tim said, "Thank you, Sue! You are the best sister." Sue smiled and gave him a hug. Then they played with the truck until the sun went down, and Mom called them in for dinner.`

// bench.Perplexity on the TinyStories fixture agrees with an independent
// computation to 0.1%: the text's tokens cut into windows by the stated
// rule (BOS, then up to context−1 tokens), each window's log-likelihood
// from the float64 reference forward pass. With the model's own context
// the text is one sequence; with --ctx 48 it takes several windows.
func TestPerplexityMatchesFloat64Reference(t *testing.T) {
	file := filepath.Join(t.TempDir(), "story.txt")
	if err := os.WriteFile(file, []byte(story), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := cpu.New().Load(context.Background(), tinyStoriesDir, engine.LoadOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sc := m.(engine.Scorer)
	ids, err := sc.Tokenize(context.Background(), story, false)
	if err != nil {
		t.Fatal(err)
	}
	bos := sc.BOS()
	ref := cpu.NewRefScorer(t, tinyStoriesDir)
	for _, c := range []struct{ ctx, windows int }{{0, 1}, {48, (len(ids) + 46) / 47}} {
		rep, err := bench.Perplexity(context.Background(), tinyStoriesDir, file, bench.Options{Context: c.ctx, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		w := rep.Context - 1
		var sum float64
		for s := 0; s < len(ids); s += w {
			for _, lp := range ref(append([]int{bos}, ids[s:min(s+w, len(ids))]...)) {
				sum += lp
			}
		}
		want := math.Exp(-sum / float64(len(ids)))
		if rep.Tokens != len(ids) || rep.Windows != c.windows || c.ctx > 0 && rep.Context != c.ctx {
			t.Errorf("ctx %d: %d tokens in %d windows of %d, want %d tokens in %d windows", c.ctx, rep.Tokens, rep.Windows, rep.Context, len(ids), c.windows)
		}
		if e := math.Abs(rep.Perplexity-want) / want; !(e < 1e-3) {
			t.Errorf("ctx %d: perplexity %.6f, float64 reference %.6f (relative error %.3g)", c.ctx, rep.Perplexity, want, e)
		}
		t.Logf("ctx %d: %d tokens, %d windows: perplexity %.5f, reference %.5f", rep.Context, rep.Tokens, rep.Windows, rep.Perplexity, want)
	}
}
