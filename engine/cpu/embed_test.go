package cpu

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// embedTexts are the inputs the fidelity tests embed: short, long (past
// one prefill chunk), punctuation and a repeated word.
var embedTexts = []string{
	"Once upon a time, there was a little girl named Lily.",
	"The cat sat on the mat.",
	"Tom and his dog went to the park! They played, ran and laughed; then they went home to eat a big red apple with mom and dad, who smiled at them. " +
		"The sun was warm and the birds sang in the tall green trees near the little blue pond where the ducks swam all day long.",
	"a a a a a",
}

// cosine64 is the cosine similarity of an engine vector and a reference.
func cosine64(got []float32, want []float64) float64 {
	var d, a, b float64
	for i := range want {
		d += float64(got[i]) * want[i]
		a += float64(got[i]) * float64(got[i])
		b += want[i] * want[i]
	}
	return d / math.Sqrt(a*b)
}

// refPool pools float64 reference rows as the rule says.
func refPool(rows [][]float64, rule string) []float64 {
	switch rule {
	case engine.PoolCLS:
		return rows[0]
	case engine.PoolLast:
		return rows[len(rows)-1]
	}
	out := make([]float64, len(rows[0]))
	for _, r := range rows {
		for i, v := range r {
			out[i] += v / float64(len(rows))
		}
	}
	return out
}

func embedOne(t *testing.T, e engine.Embedder, req engine.EmbedRequest) engine.EmbedResult {
	t.Helper()
	res, err := e.Embed(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Embeddings) != len(req.Inputs) {
		t.Fatalf("%d embeddings for %d inputs", len(res.Embeddings), len(req.Inputs))
	}
	return res
}

func textInputs(texts ...string) []engine.EmbedInput {
	out := make([]engine.EmbedInput, len(texts))
	for i, s := range texts {
		out[i] = engine.EmbedInput{Text: s}
	}
	return out
}

func TestTinyStoriesEmbeddingMatchesFloat64MeanPool(t *testing.T) {
	m := loadModel(t, tinyStories)
	if info := m.Info(); !info.Embeds || info.Pooling != engine.PoolMean || info.EmbedOnly || info.EmbedLength != 128 {
		t.Fatalf("ModelInfo embedding fields: %+v", info)
	}
	ref := loadRef(t, tinyStories)
	batch := embedOne(t, m, engine.EmbedRequest{Inputs: textInputs(embedTexts...)})
	for i, text := range embedTexts {
		ids := m.tok.Encode(text, true)
		if ids[0] != m.tok.BOS() {
			t.Fatalf("%q: the tokenizer adds no BOS (%v); the mean is meant to include it", text, ids[:1])
		}
		if batch.Tokens[i] != len(ids) {
			t.Fatalf("input %d ran as %d tokens, want %d", i, batch.Tokens[i], len(ids))
		}
		want := refPool(ref.normed(ids), engine.PoolMean)
		if c := cosine64(batch.Embeddings[i], want); c < 0.9999 {
			t.Errorf("%q: cosine to the float64 reference %.6f < 0.9999", text, c)
		}
		// Batch = single: the same input alone gives the same vector.
		alone := embedOne(t, m, engine.EmbedRequest{Inputs: textInputs(text)})
		if !equalVec(alone.Embeddings[0], batch.Embeddings[i]) {
			t.Errorf("%q: embedded alone differs from embedded in a batch", text)
		}
	}
	// Identical inputs in one batch: identical vectors.
	twice := embedOne(t, m, engine.EmbedRequest{Inputs: textInputs(embedTexts[1], embedTexts[1])})
	if !equalVec(twice.Embeddings[0], twice.Embeddings[1]) {
		t.Error("the same input twice in one batch gave two different vectors")
	}
	// Token ids are embedded as given: the text's ids give the text's vector.
	ids := m.tok.Encode(embedTexts[0], true)
	byIDs := embedOne(t, m, engine.EmbedRequest{Inputs: []engine.EmbedInput{{Tokens: ids}}})
	if !equalVec(byIDs.Embeddings[0], batch.Embeddings[0]) {
		t.Error("the text's token ids embed differently from the text")
	}
}

func equalVec(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// copyFixture copies a fixture directory's files into a temporary one the
// test may add pooling files to.
func copyFixture(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Skipf("fixture %s absent: %v", src, err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sentenceTransformers writes modules.json (Transformer, Pooling, and
// Normalize when normalize) and the Pooling config.
func sentenceTransformers(t *testing.T, dir, poolingJSON string, normalize bool) {
	mods := `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
	{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}`
	if normalize {
		mods += `,{"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}`
	}
	writeText(t, filepath.Join(dir, "modules.json"), mods+"]")
	writeText(t, filepath.Join(dir, "1_Pooling", "config.json"), poolingJSON)
}

func TestEmbeddingPoolingFromSentenceTransformersFiles(t *testing.T) {
	ref := loadRef(t, tinyStories)
	for _, tc := range []struct {
		pooling   string
		rule      string
		normalize bool
	}{
		{`{"word_embedding_dimension":128,"pooling_mode_cls_token":true,"pooling_mode_mean_tokens":false}`, engine.PoolCLS, false},
		{`{"word_embedding_dimension":128,"pooling_mode_lasttoken":true}`, engine.PoolLast, true},
		{`{"pooling_mode":"mean"}`, engine.PoolMean, true},
	} {
		dir := copyFixture(t, tinyStories)
		sentenceTransformers(t, dir, tc.pooling, tc.normalize)
		m := loadModel(t, dir)
		if info := m.Info(); info.Pooling != tc.rule || info.EmbedNormalized != tc.normalize {
			t.Fatalf("%s: Info pooling %q normalized %v, want %q %v", tc.pooling, info.Pooling, info.EmbedNormalized, tc.rule, tc.normalize)
		}
		res := embedOne(t, m, engine.EmbedRequest{Inputs: textInputs(embedTexts[0])})
		want := refPool(ref.normed(m.tok.Encode(embedTexts[0], true)), tc.rule)
		if c := cosine64(res.Embeddings[0], want); c < 0.9999 {
			t.Errorf("%s pooling: cosine %.6f < 0.9999", tc.rule, c)
		}
		var norm float64
		for _, v := range res.Embeddings[0] {
			norm += float64(v) * float64(v)
		}
		if tc.normalize && math.Abs(norm-1) > 1e-5 {
			t.Errorf("%s with a Normalize module: |v|² = %.6f, want 1", tc.rule, norm)
		}
		if !tc.normalize && math.Abs(norm-1) < 1e-3 {
			t.Errorf("%s without a Normalize module came out normalised", tc.rule)
		}
	}
}

func TestEmbeddingRefusesUnimplementedPooling(t *testing.T) {
	dir := copyFixture(t, tinyStories)
	sentenceTransformers(t, dir, `{"pooling_mode_max_tokens":true}`, false)
	m := loadModel(t, dir)
	_, err := m.Embed(context.Background(), engine.EmbedRequest{Inputs: textInputs("hi")})
	if !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), "max_tokens") {
		t.Fatalf("max pooling: got %v, want an invalid request naming max_tokens", err)
	}
}

func TestEmbeddingContextLimitAndTruncation(t *testing.T) {
	em, err := New().Load(context.Background(), tinyStories, engine.LoadOptions{Threads: 2, ContextLength: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	m := em.(*model)
	long := strings.Repeat("Lily saw a big dog. ", 10)
	_, err = m.Embed(context.Background(), engine.EmbedRequest{Inputs: textInputs("short", long)})
	if !errors.Is(err, engine.ErrContextFull) || !strings.Contains(err.Error(), "input 1") || !strings.Contains(err.Error(), "context is 16 tokens") {
		t.Fatalf("over-long input: got %v, want ErrContextFull naming input 1 and the limit 16", err)
	}
	res := embedOne(t, m, engine.EmbedRequest{Inputs: textInputs(long), Truncate: true})
	if res.Tokens[0] != 16 {
		t.Fatalf("truncated input ran as %d tokens, want 16", res.Tokens[0])
	}
	ids := m.tok.Encode(long, true)[:16]
	first := embedOne(t, m, engine.EmbedRequest{Inputs: []engine.EmbedInput{{Tokens: ids}}})
	if !equalVec(res.Embeddings[0], first.Embeddings[0]) {
		t.Error("truncation did not keep the input's first 16 tokens")
	}
	if _, err := m.Embed(context.Background(), engine.EmbedRequest{Inputs: []engine.EmbedInput{{Tokens: []int{5, 99999}}}}); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Fatalf("token id outside the vocabulary: got %v, want an invalid request", err)
	}
}
