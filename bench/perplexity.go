package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

// PerplexityReport is `edgectl bench --perplexity --json`'s document.
type PerplexityReport struct {
	Model        string  `json:"model"`
	Format       string  `json:"format,omitempty"`
	Quantization string  `json:"quantization,omitempty"`
	File         string  `json:"file"`
	Tokens       int     `json:"tokens"`  // text tokens scored (all of them; BOS is not scored)
	Context      int     `json:"context"` // window length in tokens, BOS included
	Windows      int     `json:"windows"`
	MeanNLL      float64 `json:"mean_nll"` // −mean log p per scored token, in nats
	Perplexity   float64 `json:"perplexity"`
	Seconds      float64 `json:"seconds"`
}

// Window is one span of text tokens, [Start, End), scored as its own
// sequence.
type Window struct{ Start, End int }

// Windows is the chunking rule for n text tokens and a context of ctx
// positions: consecutive, non-overlapping windows of at most ctx−1 tokens,
// each run from an empty cache behind one token of context — BOS, or,
// for a tokenizer without one (hasBOS false), the token just before the
// window, so the text's first token is not scored. Every other token is
// scored exactly once, seeing the tokens before it in its window.
func Windows(n, ctx int, hasBOS bool) []Window {
	var out []Window
	start := 0
	if !hasBOS {
		start = 1
	}
	for s := start; s < n; s += ctx - 1 {
		out = append(out, Window{s, min(s+ctx-1, n)})
	}
	return out
}

// Perplexity is exp of the mean negative log-likelihood of the tokens of
// the text in file under the model at path (loaded as Options say; the
// windows are its context long, see Windows): BOS and the text's tokens
// as one sequence while they fit the context.
func Perplexity(ctx context.Context, path, file string, o Options) (*PerplexityReport, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "perplexity text %s: %v", file, err)
	}
	if strings.TrimSpace(string(raw)) == "" {
		return nil, errkind.Errorf(errkind.Input, "perplexity text %s is empty: give a file with text to score", file)
	}
	m, err := load(ctx, path, o)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	info := m.Info()
	sc, ok := m.(engine.Scorer)
	if !ok {
		return nil, errkind.Errorf(errkind.Blocked, "%s: the %s model does not expose its logits, so its perplexity cannot be measured", path, info.Format)
	}
	start := time.Now()
	ids, err := sc.Tokenize(ctx, string(raw), false)
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, fmt.Errorf("tokenizing %s: %w", file, err))
	}
	bos, W := sc.BOS(), info.ContextLength
	if W < 2 {
		return nil, errkind.Errorf(errkind.Usage, "a context of %d tokens leaves no token to score: raise --ctx", W)
	}
	wins := Windows(len(ids), W, bos >= 0)
	if len(wins) == 0 {
		return nil, errkind.Errorf(errkind.Input, "perplexity text %s is a single token: nothing after it to score", file)
	}
	var sum float64
	scored := 0
	for i, w := range wins {
		seq := make([]int, 0, w.End-w.Start+1)
		if bos >= 0 {
			seq = append(seq, bos)
		} else {
			seq = append(seq, ids[w.Start-1])
		}
		seq = append(seq, ids[w.Start:w.End]...)
		lps, err := sc.ScoreTokens(ctx, seq)
		if err != nil {
			return nil, err
		}
		for _, lp := range lps {
			sum += lp
		}
		scored += len(lps)
		o.Progress.Emit(progress.Event{Event: progress.Progress, Step: "perplexity", Done: int64(i + 1), Total: int64(len(wins)), Unit: "windows",
			Message: fmt.Sprintf("window %d/%d: %d tokens, running perplexity %.4f", i+1, len(wins), scored, math.Exp(-sum/float64(scored)))})
	}
	nll := -sum / float64(scored)
	return &PerplexityReport{Model: info.Name, Format: info.Format, Quantization: info.Quantization, File: file,
		Tokens: scored, Context: W, Windows: len(wins), MeanNLL: nll, Perplexity: math.Exp(nll),
		Seconds: time.Since(start).Seconds()}, nil
}
