package prep

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/errkind"
)

// copyFixture copies the TinyStories fixture into dir.
func copyFixture(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	es, err := os.ReadDir(tinyStories)
	must(t, err)
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(tinyStories, e.Name()))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}
}

// editConfig rewrites config.json's keys (nil deletes a key).
func editConfig(t *testing.T, dir string, set map[string]any) {
	t.Helper()
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	for k, v := range set {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ = json.Marshal(m)
	must(t, os.WriteFile(p, b, 0o644))
}

// dropTensors rewrites model.safetensors without the named tensors, with
// the real writer.
func dropTensors(t *testing.T, dir string, drop ...string) {
	t.Helper()
	p := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(p)
	must(t, err)
	var srcs []safetensors.Source
	for _, x := range f.Tensors {
		if slices.Contains(drop, x.Name) {
			continue
		}
		b, err := f.Bytes(x)
		must(t, err)
		srcs = append(srcs, safetensors.Source{Name: x.Name, DType: x.DType, Shape: x.Shape, WriteTo: safetensors.FromBytes(append([]byte(nil), b...))})
	}
	f.Close()
	out, err := os.Create(p + ".new")
	must(t, err)
	must(t, safetensors.Write(out, nil, srcs))
	must(t, out.Close())
	must(t, os.Rename(p+".new", p))
}

// poison sets element i of an F32 tensor to v in place.
func poison(t *testing.T, dir, name string, i int, v float32) {
	t.Helper()
	p := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(p)
	must(t, err)
	x, ok := f.Tensor(name)
	off := f.DataStart() + x.Begin + int64(4*i)
	f.Close()
	if !ok || x.DType != safetensors.F32 {
		t.Fatalf("no F32 tensor %s", name)
	}
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	must(t, err)
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
	_, err = w.WriteAt(b[:], off)
	must(t, err)
	must(t, w.Close())
}

// Each input below made `prep --target cpu` exit 0 and write an OUT that
// `run` cannot load. Now the first step refuses it: exit 1, an error that
// names the user's file (not prep's cache), no OUT, and no work done (the
// step cache holds nothing). Where the CPU engine can tell, the test also
// shows that the engine indeed cannot load the input, so the check and the
// loader agree.
func TestPrepRefusesUnloadableInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spoil  func(t *testing.T, dir string)
		file   string // the user's file the error must name
		want   string
		loads  bool // the CPU engine loads it (the fault shows only when generating)
		target string
	}{
		{name: "null config", file: "config.json", want: "null",
			spoil: func(t *testing.T, d string) {
				must(t, os.WriteFile(filepath.Join(d, "config.json"), []byte("null"), 0o644))
			}},
		{name: "empty object config", file: "config.json", want: "names no model_type or architectures",
			spoil: func(t *testing.T, d string) {
				must(t, os.WriteFile(filepath.Join(d, "config.json"), []byte("{}"), 0o644))
			}},
		{name: "zero hidden size", file: "config.json", want: "hidden_size 0",
			spoil: func(t *testing.T, d string) { editConfig(t, d, map[string]any{"hidden_size": 0}) }},
		{name: "zero heads", file: "config.json", want: "num_attention_heads 0",
			spoil: func(t *testing.T, d string) { editConfig(t, d, map[string]any{"num_attention_heads": 0}) }},
		{name: "no intermediate size", file: "config.json", want: "intermediate_size 0",
			spoil: func(t *testing.T, d string) { editConfig(t, d, map[string]any{"intermediate_size": nil}) }},
		{name: "heads not a multiple of kv heads", file: "config.json", want: "not a multiple",
			spoil: func(t *testing.T, d string) { editConfig(t, d, map[string]any{"num_key_value_heads": 3}) }},
		{name: "0-byte tokenizer", file: "tokenizer.json", want: "not a tokenizer.json",
			spoil: func(t *testing.T, d string) { must(t, os.WriteFile(filepath.Join(d, "tokenizer.json"), nil, 0o644)) }},
		{name: "tokenizer without tokens", file: "tokenizer.json", want: "no tokens",
			spoil: func(t *testing.T, d string) {
				must(t, os.WriteFile(filepath.Join(d, "tokenizer.json"), []byte(`{"model":{"type":"BPE","vocab":{},"merges":[]}}`), 0o644))
			}},
		{name: "token id past the vocabulary", file: "tokenizer.json", want: "1000000000",
			spoil: func(t *testing.T, d string) {
				must(t, os.WriteFile(filepath.Join(d, "tokenizer.json"), []byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1000000000},"merges":[]}}`), 0o644))
			}},
		{name: "token id just past the vocabulary", file: "tokenizer.json", want: `token "b" has id 2500, outside the model's vocabulary of 2048`,
			spoil: func(t *testing.T, d string) {
				must(t, os.WriteFile(filepath.Join(d, "tokenizer.json"), []byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":2500},"merges":[]}}`), 0o644))
			}},
		{name: "NaN weight", file: "model.safetensors", want: `"model.layers.1.mlp.up_proj.weight" [384 128]: element 77 is NaN`, loads: true,
			spoil: func(t *testing.T, d string) {
				poison(t, d, "model.layers.1.mlp.up_proj.weight", 77, float32(math.NaN()))
			}},
		{name: "Inf weight", file: "model.safetensors", want: "is -Inf", loads: true,
			spoil: func(t *testing.T, d string) { poison(t, d, "model.norm.weight", 5, float32(math.Inf(-1))) }},
		{name: "missing projection", file: "", want: "model.layers.1.mlp.down_proj.weight",
			spoil: func(t *testing.T, d string) { dropTensors(t, d, "model.layers.1.mlp.down_proj.weight") }},
		{name: "missing norm", file: "", want: "model.layers.0.input_layernorm.weight (pull the complete checkpoint; for norms only, edgectl patch layernorm",
			spoil: func(t *testing.T, d string) { dropTensors(t, d, "model.layers.0.input_layernorm.weight") }},
		{name: "layer without tensors", file: "", want: "declares 3 layers but the checkpoint has no tensors for layer 2",
			spoil: func(t *testing.T, d string) { editConfig(t, d, map[string]any{"num_hidden_layers": 3}) }},
		{name: "missing projection, gguf target", file: "", want: "model.layers.0.self_attn.q_proj.weight", target: TargetGGUF,
			spoil: func(t *testing.T, d string) { dropTensors(t, d, "model.layers.0.self_attn.q_proj.weight") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			src := filepath.Join(tmp, "model")
			copyFixture(t, src)
			tc.spoil(t, src)
			target := tc.target
			if target == "" {
				target = TargetCPU
			}
			o := Options{Source: src, Target: target, Out: filepath.Join(tmp, "OUT"), CacheDir: filepath.Join(tmp, "cache")}
			_, err := Run(context.Background(), nil, o)
			if err == nil {
				t.Fatal("prep accepted it")
			}
			msg := err.Error()
			if errkind.Of(err) != errkind.Input || !strings.Contains(msg, "prep step check: ") || !strings.Contains(msg, tc.want) {
				t.Errorf("kind %v, error %q; want bad input from the check step with %q", errkind.Of(err), msg, tc.want)
			}
			if named := filepath.Join(src, tc.file); !strings.Contains(msg, strings.TrimSuffix(named, "/")) || strings.Contains(msg, o.CacheDir) {
				t.Errorf("error %q should name %s and nothing in the cache", msg, named)
			}
			if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
				t.Error("OUT written for an unloadable model")
			}
			if es, _ := os.ReadDir(filepath.Join(o.CacheDir, "steps")); len(es) != 0 {
				t.Errorf("work was done before the check: cache holds %d entries", len(es))
			}
			if tc.loads {
				return
			}
			if m, err := cpu.New().Load(context.Background(), src, engine.LoadOptions{Threads: 1}); err == nil {
				_, serr := m.NewSession()
				m.Close()
				if serr == nil && target == TargetCPU {
					t.Errorf("the CPU engine loads this input: the check refuses a loadable model")
				}
			}
		})
	}
}

// The ax650 target tolerates missing norms in the check (its layernorm
// step adds them), and the unmodified fixture passes every check.
func TestPrepCheckPassesLoadableInput(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "model")
	copyFixture(t, src)
	f, err := validate(src, true)
	if err != nil || len(f) != 1 || !strings.Contains(f[0].Message, "all finite") {
		t.Fatalf("fixture: %v %+v", err, f)
	}
	dropTensors(t, src, "model.layers.0.input_layernorm.weight")
	if _, err := validate(src, false); err != nil {
		t.Errorf("ax650 check refused a model whose norms the layernorm step adds: %v", err)
	}
	os.Remove(filepath.Join(src, "tokenizer.json"))
	if f, err := validate(src, false); err != nil || len(f) != 2 || f[1].Severity != "warning" {
		t.Errorf("a missing tokenizer is a warning: %v %+v", err, f)
	}
}

// Every float width's NaN and infinities are found, at the right index,
// and ordinary values (including the largest finite ones) pass.
func TestFirstNonFinite(t *testing.T) {
	le16 := func(v ...uint16) []byte {
		b := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], x)
		}
		return b
	}
	le32 := func(v ...float32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	le64 := func(v ...float64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return b
	}
	for _, tc := range []struct {
		dt    safetensors.DType
		b     []byte
		width int
		want  int
	}{
		{safetensors.F16, le16(0x3c00, 0x7bff, 0xfbff, 0x0001), 2, -1}, // 1, ±max, subnormal
		{safetensors.F16, le16(0x3c00, 0x7c00), 2, 1},                  // +Inf
		{safetensors.F16, le16(0xfe00), 2, 0},                          // NaN
		{safetensors.BF16, le16(0x3f80, 0x7f7f, 0xff7f), 2, -1},
		{safetensors.BF16, le16(0x3f80, 0x3f80, 0x7fc0), 2, 2},
		{safetensors.F32, le32(1, math.MaxFloat32, -math.MaxFloat32), 4, -1},
		{safetensors.F32, le32(1, float32(math.Inf(1))), 4, 1},
		{safetensors.F64, le64(1, math.MaxFloat64), 8, -1},
		{safetensors.F64, le64(math.NaN()), 8, 0},
	} {
		if got := firstNonFinite(tc.b, tc.dt, tc.width); got != tc.want {
			t.Errorf("%s % x: %d, want %d", tc.dt, tc.b, got, tc.want)
		}
	}
}
