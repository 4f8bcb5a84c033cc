package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/upstream"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// directEmbed embeds texts with the CPU engine itself, for the routes'
// answers to be compared with.
func directEmbed(t *testing.T, ctxLen int, texts ...string) engine.EmbedResult {
	t.Helper()
	m, err := cpu.New().Load(context.Background(), tinyStories, engine.LoadOptions{Threads: 1, ContextLength: ctxLen})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req := engine.EmbedRequest{Truncate: true}
	for _, s := range texts {
		req.Inputs = append(req.Inputs, engine.EmbedInput{Text: s})
	}
	res, err := m.(engine.Embedder).Embed(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func unit(v []float32) []float64 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x) / math.Sqrt(ss)
	}
	return out
}

// nearVec reports whether got equals want within float32 rounding.
func nearVec(got, want []float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6 {
			return fmt.Errorf("component %d = %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

func norm64(v []float64) float64 {
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	return math.Sqrt(ss)
}

func embedServer(t *testing.T, ctxLen int) *testServer {
	root := t.TempDir()
	tinyDir(t, root, "tiny")
	return start(t, Options{ModelDirs: []string{root}, Lanes: map[string]LaneConfig{LaneCPU: {Context: ctxLen, Threads: 1}},
		Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
}

var serveTexts = []string{"Once upon a time, there was a little girl named Lily.", "The cat sat on the mat.", "The cat sat on the mat."}

func TestOpenAIEmbeddingsThroughSDK(t *testing.T) {
	ts := embedServer(t, 0)
	want := directEmbed(t, 0, serveTexts...)
	cl := ts.client()
	ctx := context.Background()
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		resp, err := cl.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny", EncodingFormat: format,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: serveTexts}})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if len(resp.Data) != len(serveTexts) || resp.Usage.PromptTokens != int64(want.PromptTokens) || resp.Usage.TotalTokens != int64(want.PromptTokens) {
			t.Fatalf("%s: %d vectors, usage %+v; want %d vectors and %d prompt tokens", format, len(resp.Data), resp.Usage, len(serveTexts), want.PromptTokens)
		}
		if format == openai.EmbeddingNewParamsEncodingFormatBase64 && !strings.Contains(resp.RawJSON(), `"embedding":"`) {
			t.Fatalf("base64 asked for, the answer holds no base64 string: %.200s", resp.RawJSON())
		}
		for i, d := range resp.Data {
			if d.Index != int64(i) {
				t.Fatalf("%s: data[%d].index = %d", format, i, d.Index)
			}
			if err := nearVec(d.Embedding, unit(want.Embeddings[i])); err != nil {
				t.Fatalf("%s: input %d: %v (the route's vector is the engine's, normalised)", format, i, err)
			}
			if n := norm64(d.Embedding); math.Abs(n-1) > 1e-6 {
				t.Fatalf("%s: input %d has norm %v, want 1 (OpenAI's vectors are normalised)", format, i, n)
			}
		}
		if err := nearVec(resp.Data[1].Embedding, resp.Data[2].Embedding); err != nil {
			t.Fatalf("%s: the same text twice gave different vectors: %v", format, err)
		}
	}
	// dimensions: the first N components, renormalised.
	resp, err := cl.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny", Dimensions: openai.Int(16),
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(serveTexts[0])}})
	if err != nil {
		t.Fatal(err)
	}
	if err := nearVec(resp.Data[0].Embedding, unit(want.Embeddings[0][:16])); err != nil {
		t.Fatalf("dimensions 16: %v", err)
	}
	// Token arrays go to the model as they are.
	ids := []int64{1, 400, 401, 402}
	resp, err = cl.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{ids, ids}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 2 || resp.Usage.PromptTokens != 8 {
		t.Fatalf("token arrays: %d vectors, %d prompt tokens; want 2 and 8", len(resp.Data), resp.Usage.PromptTokens)
	}
	// Refusals: a typed 400 naming the field.
	_, err = cl.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny", Dimensions: openai.Int(4096),
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	var apiErr *openai.Error
	if !asAPIError(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "128") || apiErr.Param != "dimensions" {
		t.Fatalf("dimensions beyond the model's 128: got %v, want a 400 on param dimensions naming 128", err)
	}
	_, err = cl.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "nope", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	if !asAPIError(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("unknown model: got %v, want 404", err)
	}
}

func asAPIError(err error, target **openai.Error) bool {
	e, ok := err.(*openai.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestEmbeddingsContextLimit(t *testing.T) {
	ts := embedServer(t, 16)
	long := strings.Repeat("Lily saw a big dog. ", 10)
	// OpenAI: no truncation; a 400 naming the limit.
	code, _, b := post(t, ts.URL+"/v1/embeddings", map[string]any{"model": "tiny", "input": []string{"hi", long}})
	if code != 400 || !strings.Contains(string(b), "context is 16 tokens") || !strings.Contains(string(b), "input 1") {
		t.Fatalf("/v1/embeddings over the context: %d %s", code, b)
	}
	// Ollama: truncated by default, as Ollama.
	code, _, b = post(t, ts.URL+"/api/embed", map[string]any{"model": "tiny", "input": long})
	var er struct {
		Model           string      `json:"model"`
		Embeddings      [][]float64 `json:"embeddings"`
		PromptEvalCount int         `json:"prompt_eval_count"`
		TotalDuration   int64       `json:"total_duration"`
	}
	if code != 200 || json.Unmarshal(b, &er) != nil || len(er.Embeddings) != 1 || er.PromptEvalCount != 16 || er.TotalDuration <= 0 {
		t.Fatalf("/api/embed truncating: %d %.300s", code, b)
	}
	want := directEmbed(t, 16, long)
	if err := nearVec(er.Embeddings[0], unit(want.Embeddings[0])); err != nil {
		t.Fatalf("/api/embed truncated vector: %v", err)
	}
	code, _, b = post(t, ts.URL+"/api/embed", map[string]any{"model": "tiny", "input": long, "truncate": false})
	if code != 400 || !strings.Contains(string(b), "context is 16 tokens") || !strings.HasPrefix(string(b), `{"error":"`) {
		t.Fatalf("/api/embed truncate false: %d %s, want an Ollama 400 naming the limit", code, b)
	}
	code, _, b = post(t, ts.URL+"/api/embeddings", map[string]any{"model": "tiny", "prompt": long})
	if code != 400 || !strings.Contains(string(b), "context is 16 tokens") {
		t.Fatalf("/api/embeddings over the context: %d %s", code, b)
	}
}

func TestOllamaEmbedRoutes(t *testing.T) {
	ts := embedServer(t, 0)
	want := directEmbed(t, 0, serveTexts...)
	code, _, b := post(t, ts.URL+"/api/embed", map[string]any{"model": "tiny", "input": serveTexts, "dimensions": 32})
	var er struct {
		Embeddings      [][]float64 `json:"embeddings"`
		PromptEvalCount int         `json:"prompt_eval_count"`
	}
	if code != 200 || json.Unmarshal(b, &er) != nil || len(er.Embeddings) != 3 || er.PromptEvalCount != want.PromptTokens {
		t.Fatalf("/api/embed: %d %.300s", code, b)
	}
	for i := range serveTexts {
		if err := nearVec(er.Embeddings[i], unit(want.Embeddings[i][:32])); err != nil {
			t.Fatalf("/api/embed input %d with dimensions 32: %v", i, err)
		}
	}
	// No input: the model is loaded, no vectors.
	code, _, b = post(t, ts.URL+"/api/embed", map[string]any{"model": "tiny"})
	if code != 200 || !strings.Contains(string(b), `"embeddings":[]`) {
		t.Fatalf("/api/embed without input: %d %s", code, b)
	}
	// Legacy: the model's own vector, not normalised (Ollama's
	// EmbeddingsHandler), as float64.
	code, _, b = post(t, ts.URL+"/api/embeddings", map[string]any{"model": "tiny", "prompt": serveTexts[0]})
	var lr struct {
		Embedding []float64 `json:"embedding"`
	}
	if code != 200 || json.Unmarshal(b, &lr) != nil {
		t.Fatalf("/api/embeddings: %d %s", code, b)
	}
	raw := make([]float64, len(want.Embeddings[0]))
	for i, x := range want.Embeddings[0] {
		raw[i] = float64(x)
	}
	if err := nearVec(lr.Embedding, raw); err != nil {
		t.Fatalf("/api/embeddings: %v (want the model's unnormalised vector)", err)
	}
	code, _, b = post(t, ts.URL+"/api/embeddings", map[string]any{"model": "tiny", "prompt": ""})
	if code != 200 || strings.TrimSpace(string(b)) != `{"embedding":[]}` {
		t.Fatalf("/api/embeddings with an empty prompt: %d %s, want an empty embedding", code, b)
	}
	code, _, b = post(t, ts.URL+"/api/embed", map[string]any{"model": "tiny", "input": 5})
	if code != 400 || !strings.Contains(string(b), "input must be a string or an array of strings") {
		t.Fatalf("/api/embed with a number: %d %s", code, b)
	}
}

func TestEmbeddingsOnTheNPULaneAre400(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "npu", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	for _, path := range []string{"/v1/embeddings", "/api/embed"} {
		code, _, b := post(t, ts.URL+path, map[string]any{"model": "npu", "input": "hello"})
		if code != 400 || !strings.Contains(string(b), "npu") || !strings.Contains(string(b), "cannot embed") {
			t.Fatalf("%s on the axcl lane: %d %s, want a 400 naming the model", path, code, b)
		}
	}
	if names := psNames(t, ts); len(names) != 0 {
		t.Fatalf("refusing to embed loaded %v on the NPU lane", names)
	}
}

func TestEmbeddingsPassThroughToUpstream(t *testing.T) {
	var mu sync.Mutex
	var got map[string]any
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			return
		case "/v1/embeddings":
			mu.Lock()
			json.NewDecoder(r.Body).Decode(&got)
			mu.Unlock()
			// Out of order, unnormalised: serve puts them in order and normalises.
			fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":1,"embedding":[0,3,4]},{"object":"embedding","index":0,"embedding":[2,0,0]}],"usage":{"prompt_tokens":7,"total_tokens":7}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer up.Close()
	ups := []upstream.Config{{Name: "remote", URL: up.URL, Model: "embedder-v1"}}
	ts := start(t, Options{Upstreams: ups, Engines: map[string]engine.Engine{
		LaneCPU: cpu.New(), "upstream": upstream.New(ups, upstream.Options{StartTimeout: 5 * time.Second})}})
	cl := ts.client()
	resp, err := cl.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "remote",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got["model"] != "embedder-v1" || fmt.Sprint(got["input"]) != "[a b]" || got["encoding_format"] != "float" {
		t.Fatalf("the upstream was sent %v", got)
	}
	if err := nearVec(resp.Data[0].Embedding, []float64{1, 0, 0}); err != nil {
		t.Fatalf("input 0: %v", err)
	}
	if err := nearVec(resp.Data[1].Embedding, []float64{0, 0.6, 0.8}); err != nil {
		t.Fatalf("input 1: %v", err)
	}
	if resp.Usage.PromptTokens != 7 {
		t.Fatalf("usage from the upstream: %+v", resp.Usage)
	}
}

func TestEncoderOnlyModelIsListedEmbedsAndRefusesChat(t *testing.T) {
	root := t.TempDir()
	spec := testmodel.BertSpec{Words: []string{"edge", "device", "cat"}, Pooling: "cls", Normalize: true, Seed: 5}
	if err := testmodel.WriteBert(filepath.Join(root, "minilm"), spec); err != nil {
		t.Fatal(err)
	}
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
	for _, path := range []string{"/v1/models", "/api/tags"} {
		if code, b := get(t, ts.URL+path); code != 200 || !strings.Contains(string(b), "minilm") {
			t.Fatalf("GET %s: %d %s, want the encoder listed", path, code, b)
		}
	}
	// Chat and generate: a 400 saying it only embeds, on both APIs.
	_, err := ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "minilm",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !asAPIError(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "only embeds") {
		t.Fatalf("chat with an encoder: %v, want a 400 saying it only embeds", err)
	}
	code, _, b := post(t, ts.URL+"/api/generate", map[string]any{"model": "minilm", "prompt": "hi", "stream": false})
	if code != 400 || !strings.Contains(string(b), "only embeds") {
		t.Fatalf("/api/generate with an encoder: %d %s", code, b)
	}
	// Embedding works: token ids always, text through its WordPiece tokenizer.
	cl := ts.client()
	resp, err := cl.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "minilm",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{testmodel.BertCLS, 5, 6, testmodel.BertSEP}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 1 || len(resp.Data[0].Embedding) != 32 || math.Abs(norm64(resp.Data[0].Embedding)-1) > 1e-6 {
		t.Fatalf("encoder embedding: %d vectors of %d", len(resp.Data), len(resp.Data[0].Embedding))
	}
	text, err := cl.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "minilm",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("Edge device")}})
	if err != nil {
		t.Fatalf("text into the encoder (WordPiece tokenizer): %v", err)
	}
	if err := nearVec(text.Data[0].Embedding, resp.Data[0].Embedding); err != nil || text.Usage.PromptTokens != 4 {
		t.Fatalf("\"Edge device\" should tokenize to [CLS] edge device [SEP], the ids embedded above: %v, %d tokens", err, text.Usage.PromptTokens)
	}
}
