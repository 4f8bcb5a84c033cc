package cpu

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// packIDs is [CLS] + n ids + [SEP] (n < 0: the single id [CLS]), varied
// by seed so no two inputs are alike.
func packIDs(n, seed, vocab int) []int {
	if n < 0 {
		return []int{testmodel.BertCLS}
	}
	ids := []int{testmodel.BertCLS}
	for i := range n {
		ids = append(ids, 5+(i*7+seed*13+n)%(vocab-5))
	}
	return append(ids, testmodel.BertSEP)
}

// loadBertPacked loads a generated encoder with a pack budget.
func loadBertPacked(t *testing.T, path string, budget int) *bertModel {
	t.Helper()
	b := loadEngineModel(t, path).(*bertModel)
	b.packTokens = budget
	return b
}

// TestBertPackedEqualsAlone embeds mixed lengths — one token, [CLS][SEP]
// alone, short and long, one input past the pack budget, enough tokens
// that the products split into slabs — in packs, and checks each vector
// bit for bit against the same input embedded alone, for the checkpoint
// directory on every kernel table and its GGUF, mean and cls pooling.
func TestBertPackedEqualsAlone(t *testing.T) {
	for _, pooling := range []string{engine.PoolMean, engine.PoolCLS} {
		spec, dir := smallBert(t, pooling, 200, 11)
		vocab := len(spec.BertVocab())
		// 0 and -1 are [CLS][SEP] and [CLS]; 150 is past the budget of 64.
		var seqs [][]int
		for i, n := range []int{17, -1, 0, 5, 150, 60, 1, 33, -1, 40} {
			seqs = append(seqs, packIDs(n, i, vocab))
		}
		// FFN down has K = 192: a SIMD call of more than 682 rows would
		// take two K passes, so 800 rows in one pack need two slabs.
		for i := range 40 {
			seqs = append(seqs, packIDs(18, 100+i, vocab))
		}
		// Every kernel table this CPU runs (portable, AVX2, AVX-512, …) on
		// the directory: each has its own GEMM passes and edges.
		type run struct {
			path string
			kern *kernels
		}
		runs := []run{{spec.GGUF, nil}}
		for _, k := range kernelSets() {
			runs = append(runs, run{dir, k})
		}
		for _, rn := range runs {
			path := rn.path
			name := pooling + " " + filepath.Base(path)
			load := func(budget int) *bertModel {
				b := loadBertPacked(t, path, budget)
				if rn.kern != nil {
					b.m.kern = rn.kern // float weights: any table multiplies them
					name = pooling + " " + filepath.Base(path) + " " + rn.kern.name
				}
				return b
			}
			alone := make([][]float32, len(seqs))
			one := load(0)
			for i := range seqs {
				alone[i] = embedOne(t, one, engine.EmbedRequest{Inputs: idInputs(seqs[i : i+1])}).Embeddings[0]
			}
			for _, budget := range []int{64, embedPackTokens} {
				var progress []int
				res := embedOne(t, load(budget), engine.EmbedRequest{Inputs: idInputs(seqs),
					Progress: func(d int) { progress = append(progress, d) }})
				for i := range seqs {
					if !equalVec(res.Embeddings[i], alone[i]) {
						t.Errorf("%s, budget %d: input %d (%d tokens) packed differs from alone", name, budget, i, len(seqs[i]))
					}
					if res.Tokens[i] != len(seqs[i]) {
						t.Errorf("%s: input %d ran as %d tokens, want %d", name, i, res.Tokens[i], len(seqs[i]))
					}
				}
				if len(progress) != len(seqs) || progress[len(progress)-1] != len(seqs) {
					t.Errorf("%s, budget %d: progress %v, want one call per input up to %d", name, budget, progress, len(seqs))
				}
			}
		}
	}
}

// TestBertPackedTextAndTruncation: text inputs (an empty text is
// [CLS][SEP]) and over-long inputs truncated in a pack give the vectors
// they get alone; without truncation the long input fails the request.
func TestBertPackedTextAndTruncation(t *testing.T) {
	spec := testmodel.BertSpec{MaxPos: 24, Words: []string{"a", "cat", "sat"}, Seed: 5}
	dir, hasTok := genBert(t, spec)
	if !hasTok {
		t.Skip("the tokenizer does not read the generated WordPiece tokenizer.json")
	}
	texts := []string{"a cat", "", strings.Repeat("cat sat ", 30), "sat", strings.Repeat("a ", 40)}
	one := loadBertPacked(t, dir, 0)
	packed := loadBertPacked(t, dir, 40)
	res := embedOne(t, packed, engine.EmbedRequest{Inputs: textInputs(texts...), Truncate: true})
	for i, text := range texts {
		alone := embedOne(t, one, engine.EmbedRequest{Inputs: textInputs(text), Truncate: true})
		if !equalVec(res.Embeddings[i], alone.Embeddings[0]) || res.Tokens[i] != alone.Tokens[0] {
			t.Errorf("text %d (%d tokens): packed differs from alone", i, alone.Tokens[0])
		}
	}
	if res.Tokens[1] != 2 || res.Tokens[2] != 24 {
		t.Errorf("tokens %v: want the empty text as [CLS][SEP] (2) and the long one truncated to 24", res.Tokens)
	}
	_, err := packed.Embed(context.Background(), engine.EmbedRequest{Inputs: textInputs(texts...)})
	if !errors.Is(err, engine.ErrContextFull) || !strings.Contains(err.Error(), "input 2") {
		t.Fatalf("without truncation: %v, want ErrContextFull naming input 2", err)
	}
	_, err = packed.Embed(context.Background(), engine.EmbedRequest{Inputs: []engine.EmbedInput{{Tokens: []int{2, 3}}, {Tokens: []int{}}}})
	if !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), "input 1 is empty") {
		t.Fatalf("an empty token array: %v, want an invalid request naming input 1", err)
	}
}

// TestBertPackCancelBetweenPacks cancels when the first pack's vectors
// arrive: the next pack does not run.
func TestBertPackCancelBetweenPacks(t *testing.T) {
	spec := testmodel.BertSpec{MaxPos: 64, Words: []string{"a"}, Seed: 2, NoTokenizer: true}
	dir, _ := genBert(t, spec)
	b := loadBertPacked(t, dir, 40)
	var seqs [][]int
	for i := range 6 {
		seqs = append(seqs, packIDs(18, i, len(spec.BertVocab()))) // 20 tokens: two a pack
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done []int
	_, err := b.Embed(ctx, engine.EmbedRequest{Inputs: idInputs(seqs), Progress: func(d int) {
		done = append(done, d)
		cancel()
	}})
	if !errors.Is(err, context.Canceled) || len(done) != 2 {
		t.Fatalf("cancelled after the first pack: %v after %v inputs, want context.Canceled after the first pack's 2", err, done)
	}
}

// TestBertPackSlabs: slabs cover the pack's rows in order, none holds
// more rows than one K pass takes, and a call of one row is exactly a
// one-token input (the dot path it takes alone).
func TestBertPackSlabs(t *testing.T) {
	var pack [][]int
	for _, n := range []int{1, 700, 3, 1, 1, 2, 2000, 5, 1} {
		pack = append(pack, make([]int, n))
	}
	p := newBertPack(pack)
	for _, k := range []int{48, 384, 1536, 4096} {
		most := max(4, gemmOnePassActs/(4*k))
		at := 0
		for _, s := range p.packSlabs(k) {
			if s.lo != at || s.n < 1 || s.n > most {
				t.Fatalf("K %d: slab %+v after row %d (at most %d rows)", k, s, at, most)
			}
			if s.n == 1 && !(slices.Contains(p.start, s.lo) && slices.Contains(p.start, s.lo+1)) {
				t.Fatalf("K %d: a one-row slab at row %d inside a longer input", k, s.lo)
			}
			at += s.n
		}
		if at != p.rows() {
			t.Fatalf("K %d: slabs cover %d of %d rows", k, at, p.rows())
		}
	}
}

// errAfter is a context whose Err turns to Canceled after ok calls.
type errAfter struct {
	context.Context
	ok int
}

func (c *errAfter) Err() error {
	if c.ok--; c.ok < 0 {
		return context.Canceled
	}
	return nil
}

// TestBertPackCancelWithinPack: a cancel seen between two layers of a
// pack stops it there, before any vector is reported.
func TestBertPackCancelWithinPack(t *testing.T) {
	spec := testmodel.BertSpec{Layers: 3, MaxPos: 64, Words: []string{"a"}, Seed: 4, NoTokenizer: true}
	dir, _ := genBert(t, spec)
	b := loadBertPacked(t, dir, 1000)
	seqs := [][]int{packIDs(10, 1, len(spec.BertVocab())), packIDs(20, 2, len(spec.BertVocab()))}
	// One Err before the pack, one before each of layers 0 and 1.
	ctx := &errAfter{Context: context.Background(), ok: 3}
	progressed := 0
	_, err := b.Embed(ctx, engine.EmbedRequest{Inputs: idInputs(seqs), Progress: func(int) { progressed++ }})
	if !errors.Is(err, context.Canceled) || progressed != 0 || ctx.ok != -1 {
		t.Fatalf("cancel before layer 2: %v, %d inputs reported, %d Err calls left; want context.Canceled, none reported, stopped at the first Canceled",
			err, progressed, ctx.ok)
	}
}
