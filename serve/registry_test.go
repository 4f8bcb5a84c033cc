package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/upstream"
)

// builtinEngines are the engines `edgectl serve` gives the registry, each
// on its lane (axcl's Probe needs no runtime).
func builtinEngines() map[string]engine.Engine {
	return map[string]engine.Engine{LaneCPU: cpu.New(), LaneAxcl: axcl.New(axcl.Options{}), "upstream": upstream.New(nil, upstream.Options{})}
}

func TestRegistryFindsEveryFormat(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "TinyStories 656K")
	axDir(t, root, "qwen3-ax650", `{}`, 1)
	write := func(p string, b []byte) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bitnet.gguf", []byte("GGUF"))
	write("nested/phi.h1b", []byte("H1B"))
	write("notes/readme.txt", []byte("x"))
	// An axmodel directory whose config.json is the Hugging Face one is not
	// runnable by axllm: not listed (and not mistaken for a checkpoint).
	write("broken-ax/m_post.axmodel", []byte("x"))
	write("broken-ax/config.json", []byte(`{"architectures":["Qwen3ForCausalLM"]}`))

	r := NewRegistry([]string{root}, builtinEngines(), []upstream.Config{{Name: "FLM-Llama", URL: "http://127.0.0.1:1"}})
	want := map[string]string{
		"tinystories-656k:latest": LaneCPU, "qwen3-ax650:latest": LaneAxcl, "bitnet:latest": LaneCPU,
		"phi:latest": LaneCPU, "flm-llama:latest": "upstream:FLM-Llama",
	}
	got := map[string]string{}
	for _, e := range r.List() {
		got[e.Name] = e.Lane
	}
	if len(got) != len(want) {
		t.Errorf("found %v, want %v", got, want)
	}
	for n, l := range want {
		if got[n] != l {
			t.Errorf("%s: lane %q, want %q", n, got[n], l)
		}
	}
	e, ok := r.Lookup("TinyStories-656K")
	if !ok || e.Details.Format != "safetensors" || e.Details.Family != "llama" || e.Details.QuantizationLevel != "F32" || e.ContextLength != 512 || e.Size != 2626168 {
		t.Errorf("tinystories entry %+v", e)
	}
	// Models copied in while serving are found on lookup.
	write("late.gguf", []byte("GGUF"))
	if _, ok := r.Lookup("late"); !ok {
		t.Error("late model not found after rescan")
	}
}

// parrot is an engine the registry has never heard of: it runs directories
// holding a parrot.txt, and answers with that file's words and the prompt.
type parrot struct{}

func (parrot) Name() string { return "parrot" }

func (parrot) Probe(path string) (engine.Found, bool) {
	fi, err := os.Stat(filepath.Join(path, "parrot.txt"))
	if err != nil {
		return engine.Found{}, false
	}
	return engine.Found{Format: "parrot-words", Size: fi.Size(), Arch: "parrot", ContextLength: 64, Family: "birds", Quantization: "Q1"}, true
}

func (parrot) Load(_ context.Context, path string, _ engine.LoadOptions) (engine.Model, error) {
	b, err := os.ReadFile(filepath.Join(path, "parrot.txt"))
	if err != nil {
		return nil, err
	}
	return parrotModel(strings.TrimSpace(string(b))), nil
}

type parrotModel string

func (m parrotModel) Info() engine.ModelInfo {
	return engine.ModelInfo{Name: "parrot", Architecture: "parrot", Format: "parrot-words", SizeBytes: int64(len(m))}
}
func (m parrotModel) NewSession() (engine.Session, error) { return m, nil }
func (parrotModel) Close() error                          { return nil }
func (parrotModel) Reset() error                          { return nil }

func (m parrotModel) Generate(_ context.Context, req engine.Request, emit func(engine.Token) error) (engine.Result, error) {
	if err := emit(engine.Token{ID: -1, Text: string(m) + " " + req.Prompt}); err != nil {
		return engine.Result{}, err
	}
	return engine.Result{FinishReason: engine.FinishStop, PromptTokens: 1, CompletionTokens: 1}, nil
}

// An engine that says what it loads brings its models to the server with
// no change to the registry: listed with what Probe found, on the lane it
// was given under, and loaded by it. Engines are asked before the CPU
// engine, so a checkpoint directory the new engine also claims is its.
func TestRegistryAsksEveryProber(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tiny")
	claimed := tinyDir(t, root, "claimed") // a checkpoint the CPU engine could run too
	for _, dir := range []string{filepath.Join(root, "polly"), claimed} {
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, "parrot.txt"), []byte("pieces of eight\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: cpu.New(), "birds": parrot{}}})
	for name, lane := range map[string]string{"polly": "birds", "claimed": "birds", "tiny": LaneCPU} {
		if e, ok := ts.reg.Lookup(name); !ok || e.Lane != lane {
			t.Errorf("%s: %+v, want lane %s", name, e, lane)
		}
	}
	_, b := get(t, ts.URL+"/api/tags")
	var tags api.ListResponse
	if err := json.Unmarshal(b, &tags); err != nil {
		t.Fatalf("/api/tags %s: %v", b, err)
	}
	var polly string
	for _, m := range tags.Models {
		if m.Name == "polly:latest" {
			polly = fmt.Sprintf("%d %s %s %s %v", m.Size, m.Details.Format, m.Details.Family, m.Details.QuantizationLevel, m.Details.Families)
		}
	}
	if want := "16 parrot-words birds Q1 [birds]"; polly != want {
		t.Errorf("/api/tags lists polly as %q, want %q: %s", polly, want, b)
	}
	code, _, body := post(t, ts.URL+"/api/generate", `{"model":"polly","prompt":"ahoy","raw":true,"stream":false}`)
	var gen struct{ Response string }
	if err := json.Unmarshal(body, &gen); code != 200 || err != nil || gen.Response != "pieces of eight ahoy" {
		t.Errorf("generate on the parrot lane: %d %s", code, body)
	}
}
