package serve

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
)

// The official JavaScript clients (openai, ollama, @anthropic-ai/sdk from
// npm) against the server, one node script per client
// (testdata/jsclients/*.mjs); each prints what its client returned as one
// JSON object, checked here against the server's own answers to the same
// requests sent raw. `make test-js-clients` installs the clients
// (scripts/install-js-clients.sh); without them the test skips.

const jsKey = "js-clients-key" // every client sends it in its own header

// jsClients returns the node binary and the directory whose node_modules
// holds the three clients, or skips.
func jsClients(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; `make test-js-clients` installs the JS clients and runs this test (needs node and npm)")
	}
	dir = os.Getenv("EDGECTL_JS_CLIENTS")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "edgectl-test", "js-clients")
	}
	for _, pkg := range []string{"openai", "ollama", "@anthropic-ai/sdk"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			t.Skipf("the JS client %s is not in %s; `make test-js-clients` (scripts/install-js-clients.sh) installs it", pkg, dir)
		}
	}
	return node, dir
}

// runJS runs testdata/jsclients/script beside a link to the clients'
// node_modules (ES modules resolve packages from the script's directory)
// and decodes what it prints into out.
func runJS(t *testing.T, node, clients, script string, out any, args ...string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "jsclients", script))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, script), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(clients, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node %s printed %.300s: %v", script, stdout, err)
	}
}

// rawJSON posts body to the server with the key and decodes the answer.
func rawJSON(t *testing.T, ts *testServer, path string, body any, out any, header ...string) {
	t.Helper()
	code, _, b := post(t, ts.URL+path, body, append([]string{"Authorization", "Bearer " + jsKey}, header...)...)
	if code != 200 {
		t.Fatalf("%s: %d %s", path, code, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %s: %v", path, b, err)
	}
}

// sameFloat32s checks that got holds want's float32 values exactly (both
// are the server's float32s: parsed from JSON, or decoded from base64).
func sameFloat32s(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d components, the server's answer has %d", what, len(got), len(want))
	}
	for i := range want {
		if float32(got[i]) != float32(want[i]) {
			t.Fatalf("%s: component %d = %v, the server's answer has %v", what, i, got[i], want[i])
		}
	}
}

// decodeBase64Floats decodes an OpenAI base64 embedding (little-endian float32s).
func decodeBase64Floats(t *testing.T, s string) []float64 {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("base64 embedding %.40q: %v (%d bytes)", s, err, len(b))
	}
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}

func jsServer(t *testing.T) *testServer {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	return start(t, Options{ModelDirs: []string{root}, APIKey: jsKey, Lanes: map[string]LaneConfig{LaneCPU: {Threads: 1}},
		Engines: map[string]engine.Engine{LaneCPU: cpu.New()}})
}

var jsTexts = []string{"Once upon a time, there was a little girl named Lily.", "The cat sat on the mat."}

const jsPrompt = "Once upon a time"

func TestJSClientsOpenAI(t *testing.T) {
	node, clients := jsClients(t)
	ts := jsServer(t)
	type vecs struct {
		Vectors []json.RawMessage `json:"vectors"`
		Usage   struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	type usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
	var got struct {
		EmbedDefault vecs `json:"embed_default"`
		EmbedFloat   vecs `json:"embed_float"`
		EmbedBase64  vecs `json:"embed_base64"`
		Responses    struct {
			Text, Status, Object string
			Usage                usage
		}
		ResponsesStream struct {
			Types     []string
			Deltas    string
			Completed *struct {
				Text, Status string
				Usage        usage
			}
		} `json:"responses_stream"`
		Chat struct {
			Text         string
			FinishReason string `json:"finish_reason"`
			Usage        struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		NotFound struct {
			Thrown, Typed bool
			Status        int
		} `json:"not_found"`
	}
	runJS(t, node, clients, "openai.mjs", &got, append([]string{ts.URL, jsKey, "tinystories", jsPrompt}, jsTexts...)...)

	// Embeddings: the SDK's default (it asks for base64 and decodes it),
	// "float", and an explicit "base64" (handed back as the string) all
	// carry the server's float answer.
	var want struct {
		Data []struct {
			Embedding []float64
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	rawJSON(t, ts, "/v1/embeddings", map[string]any{"model": "tinystories", "input": jsTexts, "encoding_format": "float"}, &want)
	for _, c := range []struct {
		name   string
		v      vecs
		inputs int
	}{{"default (base64 decoded by the SDK)", got.EmbedDefault, 2}, {"float", got.EmbedFloat, 2}, {"base64", got.EmbedBase64, 1}} {
		if len(c.v.Vectors) != c.inputs {
			t.Fatalf("embeddings %s: %d vectors, want %d", c.name, len(c.v.Vectors), c.inputs)
		}
		for i, raw := range c.v.Vectors {
			var vec []float64
			var s string
			if c.inputs == 1 { // explicit base64: the SDK hands back the string
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatalf("embeddings %s: vector %d is %.60s, want the base64 string", c.name, i, raw)
				}
				vec = decodeBase64Floats(t, s)
			} else if err := json.Unmarshal(raw, &vec); err != nil {
				t.Fatalf("embeddings %s: vector %d is %.60s, want numbers", c.name, i, raw)
			}
			sameFloat32s(t, "embeddings "+c.name, vec, want.Data[i].Embedding)
		}
	}
	if got.EmbedDefault.Usage.PromptTokens != want.Usage.PromptTokens || got.EmbedFloat.Usage.PromptTokens != want.Usage.PromptTokens {
		t.Errorf("embeddings usage: SDK %d/%d prompt tokens, server %d", got.EmbedDefault.Usage.PromptTokens, got.EmbedFloat.Usage.PromptTokens, want.Usage.PromptTokens)
	}

	// Responses, plain and streamed, against the raw answer (greedy, so
	// the same text).
	var resp struct {
		Status string
		Output []struct {
			Content []struct{ Type, Text string }
		}
		Usage usage
	}
	rawJSON(t, ts, "/v1/responses", map[string]any{"model": "tinystories", "input": jsPrompt, "max_output_tokens": 16, "temperature": 0}, &resp)
	if len(resp.Output) != 1 || len(resp.Output[0].Content) != 1 {
		t.Fatalf("raw /v1/responses output: %+v", resp.Output)
	}
	text := resp.Output[0].Content[0].Text
	r := got.Responses
	if r.Text != text || r.Status != resp.Status || r.Object != "response" || r.Usage != resp.Usage || r.Usage.OutputTokens == 0 {
		t.Errorf("responses.create: %+v; the server answers %q, %s, %+v", r, text, resp.Status, resp.Usage)
	}
	st := got.ResponsesStream
	if st.Deltas != text || st.Completed == nil || st.Completed.Text != text || st.Completed.Usage != resp.Usage || st.Completed.Status != resp.Status {
		t.Errorf("responses.create stream: deltas %q, completed %+v; the server answers %q, %+v", st.Deltas, st.Completed, text, resp.Usage)
	}
	if n := len(st.Types); n < 3 || st.Types[0] != "response.created" || st.Types[n-1] != "response."+resp.Status {
		t.Errorf("responses stream events: %v", st.Types)
	}

	var chat struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	rawJSON(t, ts, "/v1/chat/completions", map[string]any{"model": "tinystories", "messages": []map[string]string{{"role": "user", "content": jsPrompt}}, "max_tokens": 16, "temperature": 0}, &chat)
	if len(chat.Choices) != 1 || got.Chat.Text != chat.Choices[0].Message.Content || got.Chat.FinishReason != chat.Choices[0].FinishReason || got.Chat.Usage != chat.Usage {
		t.Errorf("chat.completions: %+v; the server answers %+v", got.Chat, chat)
	}
	if nf := got.NotFound; !nf.Thrown || !nf.Typed || nf.Status != 404 {
		t.Errorf("unknown model: %+v, want OpenAI.NotFoundError with status 404", nf)
	}
}

func TestJSClientsOllama(t *testing.T) {
	node, clients := jsClients(t)
	ts := jsServer(t)
	var got struct {
		Embed struct {
			Model           string
			Embeddings      [][]float64
			PromptEvalCount int `json:"prompt_eval_count"`
		}
		HasLegacy  bool `json:"has_legacy"`
		Embeddings struct{ Embedding []float64 }
		NotFound   struct {
			Thrown bool
			Name   string
			Status int
		} `json:"not_found"`
	}
	runJS(t, node, clients, "ollama.mjs", &got, append([]string{ts.URL, jsKey, "tinystories"}, jsTexts...)...)

	var want struct {
		Embeddings      [][]float64
		PromptEvalCount int `json:"prompt_eval_count"`
	}
	rawJSON(t, ts, "/api/embed", map[string]any{"model": "tinystories", "input": jsTexts}, &want)
	if len(got.Embed.Embeddings) != len(jsTexts) || got.Embed.PromptEvalCount != want.PromptEvalCount || got.Embed.Model != "tinystories" {
		t.Fatalf("ollama.embed: model %q, %d vectors, %d prompt tokens; the server answers %d vectors, %d tokens",
			got.Embed.Model, len(got.Embed.Embeddings), got.Embed.PromptEvalCount, len(want.Embeddings), want.PromptEvalCount)
	}
	for i := range jsTexts {
		sameFloat32s(t, "ollama.embed", got.Embed.Embeddings[i], want.Embeddings[i])
	}
	if !got.HasLegacy {
		t.Fatal("the pinned ollama client has no embeddings method; the legacy /api/embeddings goes untested")
	}
	var legacy struct{ Embedding []float64 }
	rawJSON(t, ts, "/api/embeddings", map[string]any{"model": "tinystories", "prompt": jsTexts[0]}, &legacy)
	sameFloat32s(t, "ollama.embeddings", got.Embeddings.Embedding, legacy.Embedding)
	if nf := got.NotFound; !nf.Thrown || nf.Name != "ResponseError" || nf.Status != 404 {
		t.Errorf("unknown model: %+v, want a ResponseError with status_code 404", nf)
	}
}

func TestJSClientsAnthropic(t *testing.T) {
	node, clients := jsClients(t)
	ts := jsServer(t)
	type usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
	type typedErr struct {
		Thrown     bool
		NotFound   bool `json:"not_found"`
		BadRequest bool `json:"bad_request"`
		Status     int
		Type       string
		Message    string
	}
	var got struct {
		Create struct {
			Type, Role, Text string
			StopReason       string `json:"stop_reason"`
			Usage            usage
		}
		Stream struct {
			TextEvents string `json:"text_events"`
			Text       string
			StopReason string `json:"stop_reason"`
			Usage      usage
		}
		NotFound    typedErr `json:"not_found"`
		NoMaxTokens typedErr `json:"no_max_tokens"`
	}
	runJS(t, node, clients, "anthropic.mjs", &got, ts.URL, jsKey, "tinystories", jsPrompt)

	var want struct {
		Content    []struct{ Type, Text string }
		StopReason string `json:"stop_reason"`
		Usage      usage
	}
	rawJSON(t, ts, "/v1/messages", map[string]any{"model": "tinystories", "max_tokens": 16, "temperature": 0,
		"messages": []map[string]string{{"role": "user", "content": jsPrompt}}}, &want, "anthropic-version", "2023-06-01")
	if len(want.Content) != 1 {
		t.Fatalf("raw /v1/messages content: %+v", want.Content)
	}
	text := want.Content[0].Text
	c := got.Create
	if c.Type != "message" || c.Role != "assistant" || c.Text != text || c.StopReason != want.StopReason || c.Usage != want.Usage || c.Usage.OutputTokens == 0 {
		t.Errorf("messages.create: %+v; the server answers %q, %s, %+v", c, text, want.StopReason, want.Usage)
	}
	s := got.Stream
	if s.TextEvents != text || s.Text != text || s.StopReason != want.StopReason || s.Usage != want.Usage {
		t.Errorf("messages.stream: %+v; the server answers %q, %s, %+v", s, text, want.StopReason, want.Usage)
	}
	if e := got.NotFound; !e.Thrown || !e.NotFound || e.Status != 404 || e.Type != "not_found_error" {
		t.Errorf("unknown model: %+v, want Anthropic.NotFoundError (404, not_found_error)", e)
	}
	if e := got.NoMaxTokens; !e.Thrown || !e.BadRequest || e.Status != 400 || e.Type != "invalid_request_error" || !strings.Contains(e.Message, "max_tokens") {
		t.Errorf("no max_tokens: %+v, want Anthropic.BadRequestError (400, invalid_request_error, naming max_tokens)", e)
	}
}
