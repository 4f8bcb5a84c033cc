package cpu

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// hostileCopy copies the TinyStories fixture into a temporary directory
// and merges edits into its JSON files (file name → object whose keys
// replace the file's; nested objects merge, null deletes).
func hostileCopy(t testing.TB, edits map[string]map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	es, err := os.ReadDir(tinyStories)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		copyFile(t, filepath.Join(tinyStories, e.Name()), filepath.Join(dir, e.Name()))
	}
	for name, edit := range edits {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		mergeJSON(doc, edit)
		if b, err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mergeJSON(doc, edit map[string]any) {
	for k, v := range edit {
		sub, isObj := v.(map[string]any)
		cur, curObj := doc[k].(map[string]any)
		switch {
		case v == nil:
			delete(doc, k)
		case isObj && curObj:
			mergeJSON(cur, sub)
		default:
			doc[k] = v
		}
	}
}

// heapGrowth runs f and returns how many bytes it allocated in all.
func heapGrowth(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// Sizes from a hostile config.json or tokenizer.json fail the load with
// one line naming the file, the field and the value, having allocated
// next to nothing (the red-team cases were `panic: makeslice` and
// out-of-memory kills).
func TestHostileSizesFailClearly(t *testing.T) {
	cfg := func(k string, v any) map[string]map[string]any {
		return map[string]map[string]any{"config.json": {k: v}}
	}
	tok := func(edit map[string]any) map[string]map[string]any {
		return map[string]map[string]any{"tokenizer.json": edit}
	}
	added := func(id float64) map[string]map[string]any {
		return tok(map[string]any{"added_tokens": []any{map[string]any{"id": id, "content": "<evil>", "special": true}}})
	}
	cases := []struct {
		name  string
		edits map[string]map[string]any
		want  []string // all must appear in the error
	}{
		{"vocab_size 2^40", cfg("vocab_size", 1<<40), []string{"config.json", "vocab_size", "1099511627776"}},
		{"num_hidden_layers 2^40", cfg("num_hidden_layers", 1<<40), []string{"config.json", "num_hidden_layers", "1099511627776"}},
		{"num_hidden_layers -1", cfg("num_hidden_layers", -1), []string{"config.json", "num_hidden_layers", "-1"}},
		{"num_hidden_layers beyond the tensors", cfg("num_hidden_layers", 4000), []string{"config.json", "num_hidden_layers", "4000", "tensors"}},
		{"num_attention_heads 2^31", cfg("num_attention_heads", 1<<31), []string{"config.json", "num_attention_heads"}},
		{"head_dim 2^40", cfg("head_dim", 1<<40), []string{"config.json", "head_dim", "1099511627776"}},
		{"intermediate_size 2^40", cfg("intermediate_size", 1<<40), []string{"config.json", "intermediate_size"}},
		{"max_position_embeddings negative", cfg("max_position_embeddings", -5), []string{"config.json", "max_position_embeddings", "-5"}},
		{"added token id 10^9", added(1e9), []string{"tokenizer.json", "1000000000"}},
		{"added token id -1", added(-1), []string{"tokenizer.json", "-1"}},
		{"vocab id 10^9", tok(map[string]any{"model": map[string]any{"vocab": map[string]any{"<a>": 0, "<b>": 1e9}}}), []string{"tokenizer.json", "1000000000"}},
		{"empty vocab", tok(map[string]any{"model": map[string]any{"vocab": nil, "merges": nil}, "added_tokens": nil}), []string{"tokenizer.json", "vocab"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := hostileCopy(t, c.edits)
			var err error
			grew := heapGrowth(func() {
				var m engine.Model
				if m, err = New().Load(context.Background(), dir, engine.LoadOptions{Threads: 1}); err == nil {
					m.Close()
				}
			})
			if err == nil {
				t.Fatal("loaded")
			}
			t.Log(err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if grew > 64<<20 {
				t.Errorf("the failed load allocated %d MiB", grew>>20)
			}
		})
	}
}

// A model declaring 2^40 positions loads with a bounded context: memory
// decides the default (half of what is available, over the KV bytes of a
// position), LoadOptions.ContextLength an explicit one, and the KV cache
// reserved is that context's, not the declared one's.
func TestDeclaredContextIsBounded(t *testing.T) {
	dir := hostileCopy(t, map[string]map[string]any{"config.json": {"max_position_embeddings": 1 << 40}})
	saved := availableMemory
	t.Cleanup(func() { availableMemory = saved })
	load := func(avail int64, opts engine.LoadOptions) (*model, error) {
		availableMemory = func() int64 { return avail }
		opts.Threads = 1
		m, err := New().Load(context.Background(), dir, opts)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { m.Close() })
		return m.(*model), nil
	}
	perPos := int64(2 * 4 * 2 * 4 * 16) // K and V, float32, 2 layers × 4 KV heads × 16 dims
	for _, c := range []struct {
		avail int64
		opts  engine.LoadOptions
		want  int
	}{
		{64 << 20, engine.LoadOptions{}, int(64 << 20 / 2 / perPos)}, // bounded by memory
		{1 << 40, engine.LoadOptions{}, maxContext},                  // bounded by the absolute cap
		{0, engine.LoadOptions{}, maxContext},                        // memory unknown
		{4096, engine.LoadOptions{}, minDefaultContext},              // never below the floor
		{64 << 20, engine.LoadOptions{ContextLength: 300}, 300},      // asked for
		{1 << 20, engine.LoadOptions{ContextLength: 100000}, 100000}, // asked for, memory notwithstanding
	} {
		m, err := load(c.avail, c.opts)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got := m.Info().ContextLength; got != c.want || m.arch.ctx != c.want {
			t.Errorf("available %d, %+v: context %d, want %d", c.avail, c.opts, got, c.want)
		}
	}
	// The model answers, and its cache is the bounded context's.
	m, _ := load(64<<20, engine.LoadOptions{})
	text, res := generate(t, m, engine.Request{Prompt: "Once upon a time", MaxTokens: 8, Sampling: greedy()})
	if res.CompletionTokens != 8 || len(text) < 8 {
		t.Errorf("generated %q %+v", text, res)
	}
	st := newState(m)
	if _, err := st.forward(context.Background(), []int{1}); err != nil {
		t.Fatal(err)
	}
	if int64(len(st.kc))*4*2 != int64(m.arch.ctx)*perPos {
		t.Errorf("KV cache holds %d floats for a context of %d", len(st.kc), m.arch.ctx)
	}
	st.release()
	// The model's own limit still caps an explicit length, and the engine's
	// limit refuses an absurd one.
	small := loadModel(t, tinyStories)
	if small.arch.ctx != 512 {
		t.Errorf("TinyStories context %d, want its own 512", small.arch.ctx)
	}
	if m, err := New().Load(context.Background(), tinyStories, engine.LoadOptions{ContextLength: 4096}); err != nil || m.Info().ContextLength != 512 {
		t.Errorf("ContextLength 4096 on a 512 model: %v", err)
	} else {
		m.Close()
	}
	for _, n := range []int{maxContext + 1, -1} {
		if _, err := load(64<<20, engine.LoadOptions{ContextLength: n}); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Errorf("ContextLength %d: %v", n, err)
		}
	}
}

// A tokenizer whose ids go past the model's embedding is refused at the
// first forward pass with an error, not an index panic.
func TestTokenOutsideModelVocabulary(t *testing.T) {
	dir := t.TempDir()
	if err := testmodel.Write(dir, testmodel.Spec{Vocab: 256, Config: map[string]any{"bos_token_id": 1}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyFile(t, filepath.Join(tinyStories, n), filepath.Join(dir, n))
	}
	m, err := New().Load(context.Background(), dir, engine.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, _ := m.NewSession()
	_, err = s.Generate(context.Background(), engine.Request{Prompt: "Once upon a time", MaxTokens: 2}, func(engine.Token) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "outside the model's vocabulary of 256") {
		t.Fatalf("got %v", err)
	}
}

// NaN weights make NaN logits: generation fails saying so instead of
// emitting arbitrary tokens.
func TestNaNWeightsFail(t *testing.T) {
	dir := hostileCopy(t, nil)
	path := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tn, ok := f.Tensor("model.norm.weight")
	start := f.DataStart()
	f.Close()
	if !ok || tn.DType != safetensors.F32 {
		t.Fatalf("fixture: model.norm.weight %+v", tn)
	}
	nan := make([]byte, tn.Size())
	for i := 0; i < len(nan); i += 4 {
		copy(nan[i:], []byte{0x00, 0x00, 0xc0, 0x7f}) // float32 quiet NaN, little-endian
	}
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(nan, start+tn.Begin); err != nil {
		t.Fatal(err)
	}
	w.Close()
	m := loadModel(t, dir)
	s, _ := m.NewSession()
	_, err = s.Generate(context.Background(), engine.Request{Prompt: "Once upon a time", MaxTokens: 2}, func(engine.Token) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("got %v", err)
	}
}

// GGUF metadata sizes are checked before use: a zero head count divided
// the embedding length (a panic), and a block count beyond the tensors
// present sized the layer table.
func TestHostileGGUFSizes(t *testing.T) {
	for _, c := range []struct {
		key  string
		v    any
		want string
	}{
		{"llama.attention.head_count", uint32(0), "llama.attention.head_count is 0"},
		{"llama.block_count", uint64(1 << 40), "llama.block_count is 1099511627776"},
		{"llama.block_count", uint32(1000), "holds only 2 tensors"},
		{"llama.embedding_length", uint64(1 << 40), "llama.embedding_length"},
		{"llama.context_length", int64(-1), "llama.context_length is -1"},
	} {
		path := filepath.Join(t.TempDir(), "m.gguf")
		kv := map[string]any{
			"llama.embedding_length": uint32(64), "llama.block_count": uint32(1), "llama.feed_forward_length": uint32(128),
			"llama.attention.head_count": uint32(4), "llama.context_length": uint32(256),
		}
		kv[c.key] = c.v
		if err := writeFile(path, func(out io.Writer) error {
			w := gguf.NewWriter(out)
			if err := w.Set("general.architecture", "llama"); err != nil {
				return err
			}
			for _, k := range []string{"llama.embedding_length", "llama.block_count", "llama.feed_forward_length", "llama.attention.head_count", "llama.context_length"} {
				if err := w.Set(k, kv[k]); err != nil {
					return err
				}
			}
			w.AddTensor("token_embd.weight", gguf.TypeF32, 64, 32)
			w.AddTensor("output_norm.weight", gguf.TypeF32, 64)
			if err := w.WriteHeader(); err != nil {
				return err
			}
			if err := writeF32(w, make([]float32, 64*32)); err != nil {
				return err
			}
			if err := writeF32(w, make([]float32, 64)); err != nil {
				return err
			}
			return w.Finish()
		}); err != nil {
			t.Fatal(err)
		}
		_, err := New().Load(context.Background(), path, engine.LoadOptions{Threads: 1})
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s = %v: got %v, want %q", c.key, c.v, err, c.want)
		}
	}
}

// The KV bytes of a position, which the memory bound divides by, are what
// reserveKV maps per position.
func TestKVBytesPerPosition(t *testing.T) {
	m := loadModel(t, tinyStories)
	st := newState(m)
	if err := st.reserveKV(); err != nil {
		t.Fatal(err)
	}
	defer st.release()
	if got, want := int64(len(st.kc)+len(st.vc))*4, int64(m.arch.ctx)*m.arch.kvBytesPerPosition(); got != want {
		t.Fatalf("reserved %d bytes, %d × %d per position = %d", got, m.arch.ctx, m.arch.kvBytesPerPosition(), want)
	}
}
