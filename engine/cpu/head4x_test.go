package cpu

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
)

// head4Fixture is a model the head tests compare heads on.
type head4Fixture struct{ name, path, prompt string }

// head4Fixtures are the generated BitNet models as GGUF TQ2_0 (random
// ternary layers, fp16 embeddings of σ 0.05 as the tied head) and, where
// ../shared is beside the repo, the float TinyStories-w256 (a trained
// embedding as the tied head, fluent text).
func head4Fixtures(t *testing.T) []head4Fixture {
	var fixtures []head4Fixture
	for _, seed := range []uint64{1, 5, 9} {
		spec := bitnetSpec{hidden: 256, ffn: 512, layers: 2, heads: 4, kv: 2, vocab: 6400, seed: seed}
		dir := t.TempDir()
		for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
			copyFile(t, filepath.Join(qwenTok, f), filepath.Join(dir, f))
		}
		p := filepath.Join(dir, "m.gguf")
		must(t, spec.writeGGUF(p, gguf.TypeTQ2_0))
		fixtures = append(fixtures, head4Fixture{fmt.Sprintf("BitNet TQ2_0 seed %d", seed), p, "The quick brown fox"})
	}
	if _, err := os.Stat(tinyStoriesW256); err != nil {
		t.Logf("%s absent (../shared not beside the repo): generated models only", tinyStoriesW256)
	} else {
		fixtures = append(fixtures, head4Fixture{"TinyStories-w256 F32", tinyStoriesW256, "Once upon a time"})
	}
	return fixtures
}

func loadHead(t *testing.T, path, head string) *model {
	t.Helper()
	em, err := New().Load(t.Context(), path, engine.LoadOptions{Threads: 2, Head: head})
	must(t, err)
	t.Cleanup(func() { em.Close() })
	return em.(*model)
}

// TestHead4xGreedyMatchesFloat is the evidence for ternaryHead = "q4x":
// on every fixture the q4x head's 64 greedy tokens are the float head's
// (the int8 head's and plain q4's are logged: they part from the float
// head's). The same model with K forced to 1 decodes plain q4's tokens,
// which part from the float head's on some fixture: the candidates, not
// the 4-bit head, make the text exact. Along the float head's text and
// along texts sampled from it at temperature 1, the rank of the float
// head's argmax in the 4-bit head's ordering is measured: it must stay
// under head4xCandidates/4, the margin K was chosen with.
func TestHead4xGreedyMatchesFloat(t *testing.T) {
	const gen = 64
	allMatch, k1Parts := true, false
	for _, fx := range head4Fixtures(t) {
		heads := map[string]*model{}
		for _, h := range []string{"q4x", "q4", "q8", "float"} {
			heads[h] = loadHead(t, fx.path, h)
		}
		if heads["q4x"].w.exact == nil || heads["q4x"].w.head.format() != "Q4_K" {
			t.Fatalf("%s: q4x head is %s without exact candidates", fx.name, heads["q4x"].w.head.format())
		}
		req := engine.Request{Prompt: fx.prompt, MaxTokens: gen, Sampling: greedy()}
		tok := map[string][]int{}
		for h, m := range heads {
			tok[h] = greedyTokens(t, m, req)
		}
		fl := tok["float"]
		if len(fl) < gen || distinct(fl) < 4 {
			t.Fatalf("%s: degenerate float-head output %v: the test would not tell heads apart", fx.name, fl)
		}
		n := commonIDs(tok["q4x"], fl)
		allMatch = allMatch && n == len(fl)
		if n != len(fl) {
			t.Errorf("%s: q4x greedy tokens part from the float head's after %d of %d", fx.name, n, len(fl))
		}
		heads["q4x"].w.exact.k = 1
		k1 := greedyTokens(t, heads["q4x"], req)
		heads["q4x"].w.exact.k = head4xCandidates
		if !slices.Equal(k1, tok["q4"]) {
			t.Errorf("%s: q4x with K=1 decodes %v, plain q4 %v", fx.name, k1, tok["q4"])
		}
		k1Parts = k1Parts || commonIDs(k1, fl) < len(fl)
		// Ranks along the float head's text and three sampled ones.
		ids := append(heads["float"].tok.Encode(fx.prompt, true), fl...)
		texts := [][]int{ids}
		for seed := range int64(3) {
			one := 1.0
			s := engine.Request{Prompt: fx.prompt, MaxTokens: gen, Sampling: engine.Sampling{Temperature: &one, Seed: &seed}}
			texts = append(texts, append(heads["float"].tok.Encode(fx.prompt, true), greedyTokens(t, heads["float"], s)...))
		}
		var ranks []int
		for _, text := range texts {
			st4, stf := newState(heads["q4"]), newState(heads["float"])
			for _, id := range text[:len(text)-1] {
				l4, lf := forwardCopy(t, st4, id), forwardCopy(t, stf, id)
				ranks = append(ranks, rankOf(l4, argmax32(lf)))
			}
		}
		sort.Ints(ranks)
		t.Logf("%s: q4x = float for %d of %d greedy tokens; int8 = float for %d, q4 = float for %d, q4x(K=1) = q4 %v; "+
			"rank of the float argmax in the 4-bit order over %d positions: median %d, 99th percentile %d, max %d",
			fx.name, n, len(fl), commonIDs(tok["q8"], fl), commonIDs(tok["q4"], fl), slices.Equal(k1, tok["q4"]),
			len(ranks), ranks[len(ranks)/2], ranks[len(ranks)*99/100], ranks[len(ranks)-1])
		if r := ranks[len(ranks)-1]; r >= head4xCandidates/4 {
			t.Errorf("%s: the float head's argmax fell to rank %d of the 4-bit head's logits: K = %d leaves less than 4× margin", fx.name, r, head4xCandidates)
		}
	}
	if !k1Parts {
		t.Error("q4x with K=1 decodes the float head's text on every fixture: the fixtures do not tell the candidates' effect")
	}
	if (ternaryHead == "q4x") != allMatch {
		t.Errorf("ternaryHead is %q, but q4x's greedy tokens equal the float head's on every fixture: %v", ternaryHead, allMatch)
	}
}

// rankOf is how many logits are larger than l[i] (0: l[i] is the max).
func rankOf(l []float32, i int) int {
	n := 0
	for _, v := range l {
		if v > l[i] {
			n++
		}
	}
	return n
}

func argmax32(l []float32) int { return slices.Index(l, slices.Max(l)) }

// TestHead4xRescoresExactly checks every logit q4x writes, position by
// position along a text: the 4-bit head's top K are the float head's
// logits bit for bit and within float32 rounding of a float64 dot of the
// float rows, the others are plain q4's capped at the lowest of those.
// On a generated TQ2_0 model (tied head: the embedding's file rows) and
// on TinyStories-w256 rewritten with an untied lm_head (the head's own
// file rows, kept mapped).
func TestHead4xRescoresExactly(t *testing.T) {
	fxs := head4Fixtures(t)[:1]
	if _, err := os.Stat(tinyStoriesW256); err == nil {
		fxs = append(fxs, head4Fixture{"TinyStories-w256 untied", untiedTinyStories(t), "Once upon a time"})
	}
	for _, fx := range fxs {
		q4x, q4, fl := loadHead(t, fx.path, "q4x"), loadHead(t, fx.path, "q4"), loadHead(t, fx.path, "float")
		f, ok := fl.w.head.(*floatRows)
		if !ok || q4x.w.exact == nil {
			t.Fatalf("%s: float head %T, exact candidates %v", fx.name, fl.w.head, q4x.w.exact)
		}
		if tied := q4x.w.exact.f == q4x.w.embed; tied != (fx.name != "TinyStories-w256 untied") {
			t.Fatalf("%s: exact rows are the embedding: %v", fx.name, tied)
		}
		text := append(fl.tok.Encode(fx.prompt, true), greedyTokens(t, fl, engine.Request{Prompt: fx.prompt, MaxTokens: 24, Sampling: greedy()})...)
		sx, s4, sf := newState(q4x), newState(q4), newState(fl)
		row := make([]float32, f.c)
		var worst float64
		for p, id := range text {
			lx, l4, lf := forwardCopy(t, sx, id), forwardCopy(t, s4, id), forwardCopy(t, sf, id)
			x := sf.a.f[:f.c]
			idx, val := make([]int32, head4xCandidates), make([]float32, head4xCandidates)
			topLogits(l4, idx, val)
			low := float32(math.Inf(1))
			lo, hi := slices.Min(lf), slices.Max(lf)
			for _, r := range idx {
				f.row(int(r), row)
				var ref float64
				for j, w := range row {
					ref += float64(w) * float64(x[j])
				}
				if lx[r] != lf[r] {
					t.Fatalf("%s position %d: candidate %d: q4x logit %v, float head %v", fx.name, p, r, lx[r], lf[r])
				}
				e := math.Abs(float64(lx[r])-ref) / float64(hi-lo)
				worst = math.Max(worst, e)
				if e > 1e-5 {
					t.Fatalf("%s position %d: candidate %d: q4x logit %v, float64 %v", fx.name, p, r, lx[r], ref)
				}
				low = min(low, lx[r])
			}
			for j, v := range lx {
				if !isCandidate(idx, j) && v != min(l4[j], math.Nextafter32(low, float32(math.Inf(-1)))) {
					t.Fatalf("%s position %d: logit %d is %v, want q4's %v capped at %v", fx.name, p, j, v, l4[j], low)
				}
			}
			if isCandidate(idx, argmax32(lf)) && argmax32(lx) != argmax32(lf) {
				t.Fatalf("%s position %d: q4x argmax %d, float head's %d", fx.name, p, argmax32(lx), argmax32(lf))
			}
		}
		t.Logf("%s: %d positions, candidates' largest distance from float64 %.2g of the logits' range", fx.name, len(text), worst)
	}
}

// untiedTinyStories writes TinyStories-w256 with an untied head: config
// tie_word_embeddings false, and model.embed_tokens.weight added as a
// copy of lm_head.weight (the file holds the tied table under the head's
// name), so the head is a tensor of its own.
func untiedTinyStories(t *testing.T) string {
	dir := t.TempDir()
	for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"} {
		copyFile(t, filepath.Join(tinyStoriesW256, f), filepath.Join(dir, f))
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
	must(t, err)
	var c map[string]any
	must(t, json.Unmarshal(cfg, &c))
	c["tie_word_embeddings"] = false
	cfg, err = json.Marshal(c)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))

	raw, err := os.ReadFile(filepath.Join(tinyStoriesW256, "model.safetensors"))
	must(t, err)
	hl := binary.LittleEndian.Uint64(raw)
	var hdr map[string]json.RawMessage
	must(t, json.Unmarshal(raw[8:8+hl], &hdr))
	data := raw[8+hl:]
	var emb struct {
		Dtype   string  `json:"dtype"`
		Shape   []int   `json:"shape"`
		Offsets []int64 `json:"data_offsets"`
	}
	must(t, json.Unmarshal(hdr["lm_head.weight"], &emb))
	head := data[emb.Offsets[0]:emb.Offsets[1]]
	emb.Offsets = []int64{int64(len(data)), int64(len(data) + len(head))}
	b, err := json.Marshal(emb)
	must(t, err)
	hdr["model.embed_tokens.weight"] = b
	h, err := json.Marshal(hdr)
	must(t, err)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(append(out, h...), data...), head...)
	p := filepath.Join(dir, "model.safetensors")
	must(t, os.WriteFile(p, out, 0o644))
	return dir
}
