package pulsar2

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/testbin"
)

// TestMain removes the fake programs built for the package's tests.
func TestMain(m *testing.M) { testbin.Main(m) }

// useFakeDocker puts the fake runtime first on PATH and returns the file
// it logs its invocations to.
func useFakeDocker(t *testing.T, images string) string {
	t.Helper()
	fakeBin := testbin.Dir(t, map[string]string{"docker": testbin.FakeDocker, "podman": testbin.FakeDocker})
	t.Setenv("PATH", fakeBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	log := filepath.Join(t.TempDir(), "docker.log")
	t.Setenv("FAKE_DOCKER_LOG", log)
	t.Setenv("FAKE_DOCKER_IMAGES", images)
	t.Setenv("FAKE_PULSAR2_FAIL", "")
	t.Setenv("FAKE_PULSAR2_VERSION", "")
	t.Setenv("FAKE_PULSAR2_COS", "")
	t.Setenv("FAKE_DOCKER_DAEMON", "")
	return log
}

type modelSpec struct {
	modelType string
	layers    int
	hidden    int
	vocab     int
	dtype     safetensors.DType
	extra     map[string]any // merged into config.json
	noTok     bool
	files     map[string]string // extra files to write
}

// makeModel writes a small checkpoint: config.json, model.safetensors with
// a deterministic embedding, and the Qwen3-style tokenizer from testdata.
// It returns the directory and the embedding as float32.
func makeModel(t *testing.T, s modelSpec) (string, []float32) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "Qwen3-Tiny")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if s.modelType == "" {
		s.modelType = "qwen3"
	}
	if s.dtype == "" {
		s.dtype = safetensors.F32
	}
	cfg := map[string]any{
		"architectures": []string{"Qwen3ForCausalLM"}, "model_type": s.modelType,
		"hidden_size": s.hidden, "num_hidden_layers": s.layers, "vocab_size": s.vocab,
		"num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 4 * s.hidden,
		"torch_dtype": "bfloat16", "eos_token_id": 2,
	}
	for k, v := range s.extra {
		cfg[k] = v
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	vals := make([]float32, s.vocab*s.hidden)
	// Rounding cases first: ties to even both ways, just above a tie.
	copy(vals, []float32{
		math.Float32frombits(0x3F808000), math.Float32frombits(0x3F818000),
		math.Float32frombits(0x3F80C000), -2.5, 0,
	})
	x := uint32(12345)
	for i := 5; i < len(vals); i++ {
		x = x*1664525 + 1013904223
		vals[i] = (float32(x>>8)/float32(1<<24) - 0.5) * 0.1
	}
	raw := make([]byte, s.dtype.ByteSize(int64(len(vals))))
	if err := safetensors.EncodeFloat32(raw, s.dtype, vals); err != nil {
		t.Fatal(err)
	}
	if s.dtype != safetensors.F32 { // what the file really holds
		safetensors.DecodeFloat32(vals, s.dtype, raw)
	}
	norm := make([]byte, 4*s.hidden)
	src := []safetensors.Source{
		{Name: "model.embed_tokens.weight", DType: s.dtype, Shape: []int64{int64(s.vocab), int64(s.hidden)}, WriteTo: safetensors.FromBytes(raw)},
		{Name: "model.norm.weight", DType: safetensors.F32, Shape: []int64{int64(s.hidden)}, WriteTo: safetensors.FromBytes(norm)},
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(f, nil, src); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !s.noTok {
		for _, n := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"} {
			b, err := os.ReadFile(filepath.Join("testdata", "qwen3-tok", n))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, n), b, 0o644)
		}
		os.WriteFile(filepath.Join(dir, "generation_config.json"),
			[]byte(`{"do_sample": true, "eos_token_id": [2, 0], "temperature": 0.6, "top_k": 20, "top_p": 0.95}`), 0o644)
	}
	for n, body := range s.files {
		os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644)
	}
	return dir, vals
}

// refBF16 is a test-local float32→bf16 (round to nearest, ties to even).
func refBF16(f float32) uint16 {
	u := math.Float32bits(f)
	lower := u & 0xffff
	upper := u >> 16
	if lower > 0x8000 || (lower == 0x8000 && upper&1 == 1) {
		upper++
	}
	return uint16(upper)
}

func checkEmbedding(t *testing.T, path string, want []float32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 2*len(want) {
		t.Fatalf("%s: %d bytes, want %d", path, len(b), 2*len(want))
	}
	// The hand-checked rounding cases.
	for i, w := range []uint16{0x3F80, 0x3F82, 0x3F81, 0xC020, 0x0000} {
		if g := binary.LittleEndian.Uint16(b[2*i:]); g != w {
			t.Errorf("embedding[%d] = %#04x, want %#04x", i, g, w)
		}
	}
	for i, f := range want {
		if g := binary.LittleEndian.Uint16(b[2*i:]); g != refBF16(f) {
			t.Fatalf("embedding[%d] = %#04x, want %#04x (%g)", i, g, refBF16(f), f)
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
