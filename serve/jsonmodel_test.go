package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/format/safetensors"
)

// jsonTokens are the characters JSON needs that the tinystories
// vocabulary lacks (it has no byte tokens either), and the existing token
// whose trained LM-head row each new token copies: closers take '.'s (the
// model ends things where it ends sentences), openers the rare '<'. The
// '/' is for Hermes' closing </tool_call> (tools_test.go), '=' and '`'
// for harmony's to=functions., functionary's <function= and Command R's
// fences (tools_families_test.go).
var jsonTokens = [][2]string{{"{", "<"}, {"}", "."}, {"[", "<"}, {"]", "."}, {"/", "<"}, {"=", "<"}, {"`", "<"}}

// jsonTinyDir writes the tinystories fixture into root/name with
// jsonTokens appended to its vocabulary (ids 2048…): the trained model,
// able to spell any JSON document, which it has never seen. The weights
// are its own but for the four copied rows of the tied LM head.
func jsonTinyDir(t testing.TB, root, name string) string {
	t.Helper()
	src, _ := filepath.Abs(tinyStories)
	if _, err := os.Stat(src); err != nil {
		t.Skipf("the tinystories fixture is absent (%v)", err)
	}
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	readJSON := func(name string) map[string]any {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	writeJSON := func(name string, v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tok := readJSON("tokenizer.json")
	vocab := tok["model"].(map[string]any)["vocab"].(map[string]any)
	n := len(vocab)
	var from []int
	for i, jt := range jsonTokens {
		from = append(from, int(vocab[jt[1]].(float64)))
		vocab[jt[0]] = n + i
	}
	writeJSON("tokenizer.json", tok)
	cfg := readJSON("config.json")
	cfg["vocab_size"] = n + len(jsonTokens)
	writeJSON("config.json", cfg)
	for _, f := range []string{"generation_config.json", "special_tokens_map.json", "tokenizer_config.json"} {
		if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}

	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []safetensors.Source
	for _, ten := range f.Tensors {
		s := safetensors.Source{Name: ten.Name, DType: ten.DType, Shape: ten.Shape, WriteTo: f.CopyTensor(ten)}
		if ten.Name == "lm_head.weight" {
			w, err := f.Float32(ten)
			if err != nil {
				t.Fatal(err)
			}
			rows, width := int(ten.Shape[0]), int(ten.Shape[1])
			if rows != n {
				t.Fatalf("lm_head.weight has %d rows, the vocabulary %d", rows, n)
			}
			for _, r := range from {
				w = append(w, w[r*width:(r+1)*width]...)
			}
			b := make([]byte, 4*len(w))
			if err := safetensors.EncodeFloat32(b, safetensors.F32, w); err != nil {
				t.Fatal(err)
			}
			s.DType, s.Shape, s.WriteTo = safetensors.F32, []int64{int64(rows + len(from)), int64(width)}, safetensors.FromBytes(b)
		}
		out = append(out, s)
	}
	mf, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	if err := safetensors.Write(mf, nil, out); err != nil {
		t.Fatal(err)
	}
	return dir
}
