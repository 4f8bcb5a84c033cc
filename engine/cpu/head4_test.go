package cpu

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/half"
)

// TestHead4QuantizesAsGGUF: the 4-bit head of a float head is, row by row,
// the bytes format/gguf's quantizer writes for that row, in the type
// head4Type picks for its width (Q4_K, Q4_0 for rows that do not fill a
// super-block, the int8 head for rows that fill no 4-bit block), and the
// float rows' mapped pages are released once, all of them.
func TestHead4QuantizesAsGGUF(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct {
		cols int
		want string // the head's format
	}{{512, "Q4_K"}, {2560, "Q4_K"}, {288, "Q4_0"}, {100, "Q8"}} {
		const rows = 333 // not a multiple of the workers' chunks
		raw := make([]byte, 2*rows*c.cols)
		for i := 0; i < len(raw); i += 2 {
			h := half.F32ToF16(float32(0.05 * rng.NormFloat64()))
			raw[i], raw[i+1] = byte(h), byte(h>>8)
		}
		f, err := newFloatRows(raw, "F16", rows, c.cols)
		must(t, err)
		var mu sync.Mutex
		released := make([]int, rows)
		f.release = func(off, n int64) {
			mu.Lock()
			defer mu.Unlock()
			for r := off / int64(2*c.cols); r < (off+n)/int64(2*c.cols); r++ {
				released[r]++
			}
		}
		mem := &arena{}
		h := compactHead(f, "q4", mem)
		if h.format() != c.want || h.rows() != rows || h.cols() != c.cols {
			t.Fatalf("%d columns: head %s %d×%d, want %s", c.cols, h.format(), h.rows(), h.cols(), c.want)
		}
		for r, n := range released {
			if n != 1 {
				t.Fatalf("%d columns: row %d released %d times", c.cols, r, n)
			}
		}
		q, ok := h.(*quantLinear)
		if !ok {
			mem.Close()
			continue
		}
		row := make([]float32, c.cols)
		for r := range rows {
			f.row(r, row)
			want, err := gguf.Quantize(q.typ, row)
			must(t, err)
			if got := q.raw[r*q.rowBytes : (r+1)*q.rowBytes]; !slices.Equal(got, want) {
				t.Fatalf("%d columns, row %d: %x…, gguf.Quantize %x…", c.cols, r, got[:16], want[:16])
			}
		}
		mem.Close()
	}
}

// TestHead4GreedyMatchesInt8 is the evidence that plain q4 is not
// ternaryHead: it would be "q4" exactly when the 4-bit head's greedy
// tokens are the int8 head's, all 48 generated, on every fixture (q4x,
// TestHead4xGreedyMatchesFloat, is the default instead). Fixtures: generated BitNet models as GGUF
// TQ2_0 (random ternary layers, fp16 embeddings of σ 0.05 as the tied
// head), and the float TinyStories-w256 (a trained embedding as the tied
// head, fluent text) with each head asked for. (TinyStories-w256 packed
// to TQ2_0 by quant pack repeats one token from the start with every
// head: it cannot tell heads apart.) The logits along the int8 head's
// tokens are compared too: both quantized heads must stay near the float
// head's (int8 within 3% of the logits' range, 4-bit within 15%), and the
// distances are logged for docs/engine.md.
func TestHead4GreedyMatchesInt8(t *testing.T) {
	const gen = 48
	allMatch := true
	for _, fx := range head4Fixtures(t) {
		heads := map[string]*model{}
		for _, h := range []string{"q4", "q8", "float"} {
			em, err := New().Load(t.Context(), fx.path, engine.LoadOptions{Threads: 2, Head: h})
			must(t, err)
			t.Cleanup(func() { em.Close() })
			heads[h] = em.(*model)
		}
		if f := heads["q4"].w.head.format(); f != "Q4_K" {
			t.Fatalf("%s: 4-bit head is %s", fx.name, f)
		}
		req := engine.Request{Prompt: fx.prompt, MaxTokens: gen, Sampling: greedy()}
		q8 := greedyTokens(t, heads["q8"], req)
		q4 := greedyTokens(t, heads["q4"], req)
		fl := greedyTokens(t, heads["float"], req)
		if len(q8) < gen || distinct(q8) < 4 {
			t.Fatalf("%s: degenerate int8-head output %v: the test would not tell heads apart", fx.name, q8)
		}
		n := commonIDs(q4, q8)
		allMatch = allMatch && n == len(q8)
		// Logits along the int8 head's text, every head on the same tokens.
		ids := append(heads["q8"].tok.Encode(fx.prompt, true), q8...)
		var r48, r4f, r8f float64
		st4, st8, stf := newState(heads["q4"]), newState(heads["q8"]), newState(heads["float"])
		for _, id := range ids[:len(ids)-1] {
			l4 := forwardCopy(t, st4, id)
			l8 := forwardCopy(t, st8, id)
			lf := forwardCopy(t, stf, id)
			r48 = math.Max(r48, maxRelErr(l4, f64s(l8)))
			r4f = math.Max(r4f, maxRelErr(l4, f64s(lf)))
			r8f = math.Max(r8f, maxRelErr(l8, f64s(lf)))
		}
		t.Logf("%s: greedy tokens of the 4-bit head = the int8 head's for %d of %d, = the float head's for %d (int8 head: %d); "+
			"max relative logit difference: 4-bit vs int8 %.3g, 4-bit vs float %.3g, int8 vs float %.3g",
			fx.name, n, len(q8), commonIDs(q4, fl), commonIDs(q8, fl), r48, r4f, r8f)
		if r8f > 0.03 || r4f > 0.15 {
			t.Errorf("%s: logits of the int8 head %.3g and of the 4-bit head %.3g from the float head's (want ≤ 0.03, ≤ 0.15)", fx.name, r8f, r4f)
		}
	}
	if (ternaryHead == "q4") != allMatch {
		t.Errorf("ternaryHead is %q, but the 4-bit head's greedy tokens equal the int8 head's on every fixture: %v", ternaryHead, allMatch)
	}
}

// TestHeadForms: with no head asked, a ternary model gets ternaryHead and
// a float one keeps its float head; EDGECTL_HEAD=q4, q3x and q2x give a
// ternary model the Q4_K, Q3_K and Q2_K heads, LoadOptions.Head q4 a
// float model too (Q4_0 for TinyStories' rows of 128, which do not fill
// a super-block), and TinyStories still tells its story with it; other
// values are refused.
func TestHeadForms(t *testing.T) {
	setCPUVars(t, nil)
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 1, heads: 4, kv: 2, vocab: 512, seed: 3}
	path := filepath.Join(t.TempDir(), "m.gguf")
	must(t, spec.writeGGUF(path, gguf.TypeTQ2_0))
	want := map[string]string{"q4x": "Q4_K", "q3x": "Q3_K", "q2x": "Q2_K", "q4": "Q4_K", "q8": "Q8"}[ternaryHead]
	if f := loadModel(t, path).w.head.format(); f != want {
		t.Errorf("ternary model's default head: %s, want %s", f, want)
	}
	if f := loadModel(t, tinyStories).w.head.format(); f != "F32" {
		t.Errorf("float model's default head: %s, want F32", f)
	}
	for head, want := range map[string]string{"q4": "Q4_K", "q3x": "Q3_K", "q2x": "Q2_K"} {
		t.Setenv("EDGECTL_HEAD", head)
		if f := loadModel(t, path).w.head.format(); f != want {
			t.Errorf("EDGECTL_HEAD=%s on a ternary model: head %s, want %s", head, f, want)
		}
	}
	setCPUVars(t, nil)
	em, err := New().Load(t.Context(), tinyStories, engine.LoadOptions{Head: "q4"})
	must(t, err)
	defer em.Close()
	if f := em.(*model).w.head.format(); f != "Q4_0" {
		t.Fatalf("head q4 on TinyStories: %s, want Q4_0", f)
	}
	out, _ := generate(t, em, engine.Request{Prompt: "Once upon a time", MaxTokens: 20, Sampling: greedy()})
	t.Logf("TinyStories, 4-bit head: %q", out)
	if !strings.Contains(out, "Lily") {
		t.Errorf("TinyStories with the 4-bit head: %q", out)
	}
	if _, err := New().Load(t.Context(), tinyStories, engine.LoadOptions{Head: "q5"}); err == nil {
		t.Error("head q5 accepted")
	}
}

func greedyTokens(t *testing.T, m *model, req engine.Request) []int {
	t.Helper()
	s, err := m.NewSession()
	must(t, err)
	defer s.Close()
	var ids []int
	_, err = s.Generate(t.Context(), req, func(tk engine.Token) error { ids = append(ids, tk.ID); return nil })
	must(t, err)
	return ids
}

func commonIDs(a, b []int) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

func forwardCopy(t *testing.T, st *state, id int) []float32 {
	t.Helper()
	l, err := st.forward(context.Background(), []int{id})
	must(t, err)
	return slices.Clone(l)
}

func f64s(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// TestHead4TypeChoice measures what head4's comment claims of Q4_K against
// the other 4-bit candidates, on a trained head (TinyStories-w256's tied
// embedding, 2048 × 256) with the final hidden states of a story: the
// logits of each block type through its kernels, and of a 4.0-bit head
// with one scale per row (symmetric, the best of a grid of clipping
// scales; weights only, in float64, as it has no kernels), against the
// float head's in float64. Q4_K must be closer than Q4_0 and one scale
// per row, and within 5% of IQ4_NL (measured: 0.075, 0.104, 0.162 and
// 0.076).
func TestHead4TypeChoice(t *testing.T) {
	if _, err := os.Stat(tinyStoriesW256); err != nil {
		t.Skipf("%s absent (../shared not beside the repo)", tinyStoriesW256)
	}
	em, err := New().Load(t.Context(), tinyStoriesW256, engine.LoadOptions{Threads: 2, Head: "float"})
	must(t, err)
	defer em.Close()
	m := em.(*model)
	f := m.w.head.(*floatRows)
	const story = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends."
	var hidden [][]float32
	st := newState(m)
	for _, id := range m.tok.Encode(story, true) {
		forwardCopy(t, st, id)
		hidden = append(hidden, slices.Clone(st.a.f[:f.c]))
	}
	rows := make([][]float32, f.r)
	for r := range rows {
		rows[r] = make([]float32, f.c)
		f.row(r, rows[r])
	}
	ref := make([][]float64, len(hidden))
	for i, h := range hidden {
		ref[i] = make([]float64, f.r)
		for r, w := range rows {
			for j, v := range w {
				ref[i][r] += float64(v) * float64(h[j])
			}
		}
	}
	// score is the largest relative logit error over the story and how
	// many positions keep the float head's top token.
	score := func(logits func(h []float32) []float32) (float64, int) {
		var e float64
		top := 0
		for i, h := range hidden {
			l := logits(h)
			e = math.Max(e, maxRelErr(l, ref[i]))
			if slices.Index(l, slices.Max(l)) == argmax64(ref[i]) {
				top++
			}
		}
		return e, top
	}
	errs := map[string]float64{}
	for _, typ := range []gguf.Type{gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeIQ4_NL, gguf.TypeQ4_K} {
		mem := &arena{}
		q, err := quantizeBlockHead(f, typ, mem)
		must(t, err)
		a := &acts{kern: m.kern}
		out := make([]float32, f.r)
		e, top := score(func(h []float32) []float32 {
			a.reset(1, f.c)
			copy(a.f, h)
			m.matmul(out, q, a)
			return out
		})
		mem.Close()
		errs[typ.String()] = e
		t.Logf("%-7s %.3f bits/weight: max relative logit error %.4f, top token kept at %d of %d positions", typ,
			8*float64(typ.TypeSize())/float64(typ.BlockSize()), e, top, len(hidden))
	}
	perRow := make([][]float32, f.r)
	for r, w := range rows {
		perRow[r] = quantizeRowPerScale4(w)
	}
	e, top := score(func(h []float32) []float32 {
		out := make([]float32, f.r)
		for r, w := range perRow {
			var s float64
			for j, v := range w {
				s += float64(v) * float64(h[j])
			}
			out[r] = float32(s)
		}
		return out
	})
	t.Logf("per-row 4.000 bits/weight (float64, no activation rounding): max relative logit error %.4f, top token kept at %d of %d positions", e, top, len(hidden))
	if errs["Q4_K"] > errs["Q4_0"] || errs["Q4_K"] > 1.05*errs["IQ4_NL"] {
		t.Errorf("Q4_K's logits (%.4f) are further from the float head's than Q4_0's (%.4f) or IQ4_NL's (%.4f)", errs["Q4_K"], errs["Q4_0"], errs["IQ4_NL"])
	}
	if errs["Q4_K"] > e {
		t.Errorf("Q4_K's logits (%.4f) are further from the float head's than one scale per row's (%.4f)", errs["Q4_K"], e)
	}
}

// quantizeRowPerScale4 is w through symmetric 4-bit codes −8…7 with one
// scale for the row: the best (least squared error) of 32 clipping
// points from max|w|/8 down to a third of it.
func quantizeRowPerScale4(w []float32) []float32 {
	m := float64(absMaxGo(w))
	best, bestErr := make([]float32, len(w)), math.Inf(1)
	q := make([]float32, len(w))
	for i := range 32 {
		s := m / 8 * (1 - float64(i)/48)
		if s == 0 {
			break
		}
		var e float64
		for j, v := range w {
			c := math.Max(-8, math.Min(7, math.Round(float64(v)/s)))
			q[j] = float32(c * s)
			e += (float64(v) - c*s) * (float64(v) - c*s)
		}
		if e < bestErr {
			bestErr = e
			copy(best, q)
		}
	}
	return best
}

func argmax64(x []float64) int { return slices.Index(x, slices.Max(x)) }

// TestQuantRowQ4KIsGGUFs: the head's Q4_K quantizer writes gguf.Quantize's
// bytes for rows of every shape the rule has cases for: normal values,
// sub-blocks all positive, all negative, constant, zero, tiny (fp16
// subnormal steps), huge, and one outlier among small values.
func TestQuantRowQ4KIsGGUFs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	gens := map[string]func(i int) float32{
		"normal":   func(int) float32 { return float32(rng.NormFloat64()) },
		"positive": func(int) float32 { return float32(math.Abs(rng.NormFloat64())) + 0.5 },
		"negative": func(int) float32 { return -float32(math.Abs(rng.NormFloat64())) - 0.5 },
		"constant": func(int) float32 { return 0.25 },
		"zero":     func(int) float32 { return 0 },
		"tiny":     func(int) float32 { return float32(rng.NormFloat64() * 1e-6) },
		"huge":     func(int) float32 { return float32(rng.NormFloat64() * 3e4) },
		"outlier": func(i int) float32 {
			if i%97 == 0 {
				return 40
			}
			return float32(rng.NormFloat64() * 0.01)
		},
		"mixed": func(i int) float32 { // sub-blocks of different kinds
			switch i / 32 % 4 {
			case 0:
				return 0
			case 1:
				return float32(math.Abs(rng.NormFloat64()))
			case 2:
				return -float32(math.Abs(rng.NormFloat64()))
			}
			return float32(rng.NormFloat64())
		},
	}
	for name, gen := range gens {
		for range 20 {
			x := make([]float32, 1024)
			for i := range x {
				x[i] = gen(i)
			}
			want, err := gguf.Quantize(gguf.TypeQ4_K, x)
			must(t, err)
			got := make([]byte, len(want))
			quantRowQ4K(x, got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %x, gguf.Quantize %x", name, got[:32], want[:32])
			}
		}
	}
}

// TestHeadQuantizersFit: the 2- and 3-bit heads' quantizers write blocks
// gguf.Dequantize reads (the layouts the kernels multiply), and their
// squared error against the row is below gguf.Quantize's rule on every
// kind of row — per row on normal values, where the trial steps always
// find a better fit, and never more than 1% above it on the others —
// logged as the ratio of the errors.
func TestHeadQuantizersFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	gens := map[string]func(i int) float32{
		"normal":   func(int) float32 { return float32(0.05 * rng.NormFloat64()) },
		"positive": func(int) float32 { return float32(math.Abs(rng.NormFloat64())) + 0.5 },
		"negative": func(int) float32 { return -float32(math.Abs(rng.NormFloat64())) - 0.5 },
		"constant": func(int) float32 { return 0.25 },
		"zero":     func(int) float32 { return 0 },
		"outlier": func(i int) float32 {
			if i%97 == 0 {
				return 40
			}
			return float32(rng.NormFloat64() * 0.01)
		},
	}
	for _, c := range []struct {
		typ   gguf.Type
		quant func(x []float32, dst []byte)
	}{{gguf.TypeQ2_K, quantRowQ2K}, {gguf.TypeQ3_K, quantRowQ3K}} {
		for name, gen := range gens {
			var ours, theirs float64
			for range 20 {
				x := make([]float32, 1024)
				for i := range x {
					x[i] = gen(i)
				}
				got := make([]byte, c.typ.RowSize(int64(len(x))))
				c.quant(x, got)
				ref, err := gguf.Quantize(c.typ, x)
				must(t, err)
				e, eRef := dequantErr(t, c.typ, got, x), dequantErr(t, c.typ, ref, x)
				if e > eRef*1.01 || name == "normal" && !(e < eRef) {
					t.Fatalf("%s %s: squared error %.4g, gguf.Quantize's %.4g", c.typ, name, e, eRef)
				}
				ours, theirs = ours+e, theirs+eRef
			}
			if theirs > 0 {
				t.Logf("%s %-8s: squared error %.3f of gguf.Quantize's", c.typ, name, ours/theirs)
			}
		}
	}
}

func dequantErr(t *testing.T, typ gguf.Type, b []byte, x []float32) float64 {
	t.Helper()
	y := make([]float32, len(x))
	must(t, gguf.Dequantize(typ, b, y))
	var e float64
	for i, v := range x {
		if math.IsNaN(float64(y[i])) || math.IsInf(float64(y[i]), 0) {
			t.Fatalf("%s: element %d dequantizes to %v", typ, i, y[i])
		}
		e += (float64(v) - float64(y[i])) * (float64(v) - float64(y[i]))
	}
	return e
}
