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
	"strings"
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

// candidateForms are the head forms with exact candidates, smallest
// sketch last.
var candidateForms = []string{"q4x", "q3x", "q2x"}

// rankMargin is how far under K the float head's argmax must rank in a
// sketch's order on the fixtures: K was chosen as rankMargin × the worst
// rank measured (plus one).
const rankMargin = 4

// TestHead4xGreedyMatchesFloat is the evidence for ternaryHead: on every
// fixture the greedy tokens (64) of each form with exact candidates
// (q4x, q3x, q2x) are the float head's (the int8 head's and plain q4's
// are logged: they part from the float head's). The same model with K
// forced to 1 decodes its sketch's plain tokens (the model without
// candidates), which part from the float head's on some fixture: the
// candidates, not the sketch, make the text exact. Along the float
// head's text and along texts sampled from it at temperature 1, the rank
// of the float head's argmax in each sketch's order is measured: it must
// stay under K/rankMargin, the margin each K was chosen with. ternaryHead
// must be a form whose text matched on every fixture.
func TestHead4xGreedyMatchesFloat(t *testing.T) {
	const gen = 64
	allMatch, k1Parts := map[string]bool{}, map[string]bool{}
	for _, form := range candidateForms {
		allMatch[form] = true
	}
	for _, fx := range head4Fixtures(t) {
		heads := map[string]*model{}
		for _, h := range append([]string{"q4", "q8", "float"}, candidateForms...) {
			heads[h] = loadHead(t, fx.path, h)
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
		// The float head's text and three sampled from it.
		texts := [][]int{append(heads["float"].tok.Encode(fx.prompt, true), fl...)}
		for seed := range int64(3) {
			one := 1.0
			s := engine.Request{Prompt: fx.prompt, MaxTokens: gen, Sampling: engine.Sampling{Temperature: &one, Seed: &seed}}
			texts = append(texts, append(heads["float"].tok.Encode(fx.prompt, true), greedyTokens(t, heads["float"], s)...))
		}
		t.Logf("%s: int8 = float for %d of %d greedy tokens, q4 = float for %d", fx.name, commonIDs(tok["q8"], fl), len(fl), commonIDs(tok["q4"], fl))
		for _, form := range candidateForms {
			m := heads[form]
			ex := m.w.exact
			if want, _ := headType(form, m.w.head.cols()); ex == nil || m.w.head.format() != want.String() {
				t.Fatalf("%s: %s head is %s (want %s), exact candidates %v", fx.name, form, m.w.head.format(), want, ex)
			}
			n := commonIDs(tok[form], fl)
			allMatch[form] = allMatch[form] && n == len(fl)
			if n != len(fl) {
				t.Errorf("%s: %s greedy tokens part from the float head's after %d of %d", fx.name, form, n, len(fl))
			}
			ex.k = 1
			k1 := greedyTokens(t, m, req)
			m.w.exact = nil // the sketch alone
			plain := greedyTokens(t, m, req)
			var ranks []int
			for _, text := range texts {
				sx, sf := newState(m), newState(heads["float"])
				for _, id := range text[:len(text)-1] {
					lx, lf := forwardCopy(t, sx, id), forwardCopy(t, sf, id)
					ranks = append(ranks, rankOf(lx, argmax32(lf)))
				}
			}
			m.w.exact, ex.k = ex, blockHeads[form].k
			if !slices.Equal(k1, plain) {
				t.Errorf("%s: %s with K=1 decodes %v, its sketch alone %v", fx.name, form, k1, plain)
			}
			k1Parts[form] = k1Parts[form] || commonIDs(k1, fl) < len(fl)
			sort.Ints(ranks)
			t.Logf("%s: %s (K %d) = float for %d of %d greedy tokens, its sketch alone for %d; "+
				"rank of the float argmax in the sketch's order over %d positions: median %d, 99th percentile %d, max %d",
				fx.name, form, ex.k, n, len(fl), commonIDs(plain, fl), len(ranks), ranks[len(ranks)/2], ranks[len(ranks)*99/100], ranks[len(ranks)-1])
			if r := ranks[len(ranks)-1]; r >= ex.k/rankMargin {
				t.Errorf("%s: the float head's argmax fell to rank %d of the %s sketch's logits: K = %d leaves less than %d× margin", fx.name, r, form, ex.k, rankMargin)
			}
		}
	}
	for _, form := range candidateForms {
		if !k1Parts[form] {
			t.Errorf("%s with K=1 decodes the float head's text on every fixture: the fixtures do not tell the candidates' effect", form)
		}
	}
	if !allMatch[ternaryHead] {
		t.Errorf("ternaryHead is %q, but its greedy tokens are not the float head's on every fixture", ternaryHead)
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

// TestHead4xRescoresExactly checks every logit q4x, q3x and q2x write,
// position by position along a text: the sketch's top K are the float
// head's logits bit for bit and within float32 rounding of a float64 dot
// of the float rows, the others are the sketch's alone capped at the
// lowest of those. On a generated TQ2_0 model (tied head: the
// embedding's file rows) and on TinyStories-w256 rewritten with an
// untied lm_head (the head's own file rows, kept mapped).
func TestHead4xRescoresExactly(t *testing.T) {
	fxs := head4Fixtures(t)[:1]
	if _, err := os.Stat(tinyStoriesW256); err == nil {
		fxs = append(fxs, head4Fixture{"TinyStories-w256 untied", untiedTinyStories(t), "Once upon a time"})
	}
	for _, fc := range fxs {
		for _, form := range candidateForms {
			fx := fc
			fx.name += " " + form
			rescoresExactly(t, fx, form)
		}
	}
}

// rescoresExactly is TestHead4xRescoresExactly on one fixture and head
// form: the sketch alone is the same form loaded again without its
// candidates.
func rescoresExactly(t *testing.T, fx head4Fixture, form string) {
	q4x, q4, fl := loadHead(t, fx.path, form), loadHead(t, fx.path, form), loadHead(t, fx.path, "float")
	q4.w.exact = nil
	k := blockHeads[form].k
	f, ok := fl.w.head.(*floatRows)
	if !ok || q4x.w.exact == nil {
		t.Fatalf("%s: float head %T, exact candidates %v", fx.name, fl.w.head, q4x.w.exact)
	}
	if tied := q4x.w.exact.f == q4x.w.embed; tied != !strings.HasPrefix(fx.name, "TinyStories-w256 untied") {
		t.Fatalf("%s: exact rows are the embedding: %v", fx.name, tied)
	}
	text := append(fl.tok.Encode(fx.prompt, true), greedyTokens(t, fl, engine.Request{Prompt: fx.prompt, MaxTokens: 24, Sampling: greedy()})...)
	sx, s4, sf := newState(q4x), newState(q4), newState(fl)
	row := make([]float32, f.c)
	var worst float64
	for p, id := range text {
		lx, l4, lf := forwardCopy(t, sx, id), forwardCopy(t, s4, id), forwardCopy(t, sf, id)
		x := sf.a.f[:f.c]
		idx, val := make([]int32, k), make([]float32, k)
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

// TestHeadFormBytes: the bytes a decode step reads (DecodeBytes, which
// `edgectl bench` and the roofline use) count each head form as held —
// the sketch's blocks (Q4_K 144, Q3_K 110, Q2_K 84 bytes per 256) and K
// of the float rows for the forms with candidates — beside the same
// layers.
func TestHeadFormBytes(t *testing.T) {
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 1, heads: 4, kv: 2, vocab: 512, seed: 3}
	path := filepath.Join(t.TempDir(), "m.gguf")
	must(t, spec.writeGGUF(path, gguf.TypeTQ2_0))
	layers := func(m *model) int64 { return m.weightBytes() - m.w.head.size() - m.w.exact.bytes() }
	base := loadHead(t, path, "float")
	rowF16 := int64(2 * spec.hidden)
	for _, c := range []struct {
		form string
		typ  gguf.Type
	}{{"q4x", gguf.TypeQ4_K}, {"q3x", gguf.TypeQ3_K}, {"q2x", gguf.TypeQ2_K}, {"q4", gguf.TypeQ4_K}} {
		m := loadHead(t, path, c.form)
		w, _ := m.DecodeBytes(0)
		head := int64(spec.vocab) * c.typ.RowSize(int64(spec.hidden))
		want := layers(base) + head + int64(blockHeads[c.form].k)*rowF16
		if w != want || layers(m) != layers(base) {
			t.Errorf("%s: DecodeBytes %d, want %d (layers %d, %s head %d, %d float rows of %d)", c.form, w, want, layers(base), c.typ, head, blockHeads[c.form].k, rowF16)
		}
	}
}
