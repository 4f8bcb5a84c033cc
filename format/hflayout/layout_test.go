package hflayout

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/safetensors"
)

// decoder spells a two-layer llama/qwen3/bitnet decoder's tensor names by
// hand (not through the package's tables), with each role it should get.
func decoder(prefix, head string) map[string]string {
	m := map[string]string{
		prefix + "embed_tokens.weight": "-1 embedding",
		prefix + "norm.weight":         "-1 final_norm",
	}
	if head != "" {
		m[head] = "-1 lm_head"
	}
	for l := range 2 {
		p := fmt.Sprintf("%slayers.%d.", prefix, l)
		for suffix, kind := range map[string]string{
			"input_layernorm.weight": "input_norm", "post_attention_layernorm.weight": "post_attn_norm",
			"pre_feedforward_layernorm.weight": "pre_ffn_norm", "post_feedforward_layernorm.weight": "post_ffn_norm",
			"self_attn.q_norm.weight": "q_norm", "self_attn.k_norm.weight": "k_norm",
			"self_attn.attn_sub_norm.weight": "attn_sub_norm", "mlp.ffn_sub_norm.weight": "ffn_sub_norm",
			"self_attn.q_proj.weight": "q", "self_attn.k_proj.weight": "k", "self_attn.v_proj.weight": "v", "self_attn.o_proj.weight": "o",
			"mlp.gate_proj.weight": "gate", "mlp.up_proj.weight": "up", "mlp.down_proj.weight": "down",
			"self_attn.q_proj.bias": "q_bias", "self_attn.k_proj.bias": "k_bias", "self_attn.v_proj.bias": "v_bias", "self_attn.o_proj.bias": "o_bias",
		} {
			m[p+suffix] = fmt.Sprintf("%d %s", l, kind)
		}
	}
	return m
}

func TestEachPrefix(t *testing.T) {
	cases := []struct{ prefix, head string }{
		{"model.", "lm_head.weight"},
		{"model.language_model.", "lm_head.weight"},
		{"language_model.model.", "language_model.lm_head.weight"},
		{"llm.model.", "llm.lm_head.weight"},
	}
	for _, c := range cases {
		t.Run(c.prefix, func(t *testing.T) {
			want := decoder(c.prefix, c.head)
			// A multimodal checkpoint's other towers are not the decoder.
			names := append(slices.Sorted(maps.Keys(want)), "model.vision_tower.encoder.layers.0.mlp.fc1.weight", "multi_modal_projector.linear_1.weight")
			lay, err := Detect(names)
			if err != nil {
				t.Fatal(err)
			}
			if lay.Prefix != c.prefix || lay.Head != c.head {
				t.Fatalf("Detect: prefix %q head %q, want %q %q", lay.Prefix, lay.Head, c.prefix, c.head)
			}
			for name, role := range want {
				layer, k, ok := lay.Role(name)
				if got := fmt.Sprintf("%d %s", layer, k); !ok || got != role {
					t.Errorf("Role(%q) = %s %v, want %s", name, got, ok, role)
				}
				if pl, pk, ok := Parse(name); !ok || pl != layer || pk != k {
					t.Errorf("Parse(%q) = %d %s %v, want Role's answer", name, pl, pk, ok)
				}
				back := lay.Name(k)
				if layer >= 0 {
					back = lay.LayerName(layer, k)
				}
				if back != name {
					t.Errorf("%s of layer %d is named %q, want %q", k, layer, back, name)
				}
			}
			for _, other := range names[len(want):] {
				if _, _, ok := lay.Role(other); ok {
					t.Errorf("Role(%q) claims a non-decoder tensor", other)
				}
			}
			if emb, err := lay.StoredEmbedding(false); err != nil || emb != c.prefix+"embed_tokens.weight" {
				t.Errorf("StoredEmbedding = %q, %v", emb, err)
			}
			if head, err := lay.StoredHead(false); err != nil || head != c.head {
				t.Errorf("StoredHead(untied) = %q, %v", head, err)
			}
			if WithPrefix(c.prefix) != (Layout{Prefix: c.prefix, Head: c.head}) {
				t.Errorf("WithPrefix(%q) = %+v", c.prefix, WithPrefix(c.prefix))
			}
		})
	}
}

func TestDetectPrefersTheEmbedding(t *testing.T) {
	// The embedding decides over stray layer tensors of another root.
	lay, err := Detect([]string{"model.layers.0.self_attn.q_proj.weight", "llm.model.embed_tokens.weight"})
	if err != nil || lay.Prefix != "llm.model." {
		t.Fatalf("%+v %v", lay, err)
	}
	// Without an embedding, layers decide; then the final norm; then the head.
	for names, want := range map[string]string{
		"lm_head.weight language_model.model.layers.3.mlp.up_proj.weight": "language_model.model.",
		"model.language_model.norm.weight":                                "model.language_model.",
		"llm.lm_head.weight":                                              "llm.model.",
	} {
		if lay, err := Detect(strings.Fields(names)); err != nil || lay.Prefix != want {
			t.Errorf("Detect(%s) = %q, %v; want %q", names, lay.Prefix, err, want)
		}
	}
}

func TestTiedHead(t *testing.T) {
	// TinyStories: tied, the shared matrix stored once as lm_head.weight.
	for _, c := range []struct{ prefix, head string }{{"model.", "lm_head.weight"}, {"model.language_model.", "lm_head.weight"}, {"language_model.model.", "language_model.lm_head.weight"}} {
		lay, err := Detect([]string{c.head, c.prefix + "layers.0.input_layernorm.weight", c.prefix + "norm.weight"})
		if err != nil {
			t.Fatal(err)
		}
		if emb, err := lay.StoredEmbedding(true); err != nil || emb != c.head {
			t.Errorf("%s: tied StoredEmbedding = %q, %v; want the head", c.prefix, emb, err)
		}
		if head, err := lay.StoredHead(true); err != nil || head != "" {
			t.Errorf("%s: tied StoredHead = %q, %v; want \"\" (the embedding)", c.prefix, head, err)
		}
		// Untied, the head cannot stand in for the embedding.
		_, err = lay.StoredEmbedding(false)
		if err == nil || !strings.Contains(err.Error(), `"`+c.prefix+`embed_tokens.weight" is missing`) || !strings.Contains(err.Error(), "tie_word_embeddings is false") {
			t.Errorf("%s: untied StoredEmbedding error %v", c.prefix, err)
		}
	}
	// Tied with both stored: the embedding is the embedding, the head unused.
	lay, _ := Detect([]string{"model.embed_tokens.weight", "lm_head.weight"})
	if emb, _ := lay.StoredEmbedding(true); emb != "model.embed_tokens.weight" {
		t.Errorf("tied with both: embedding %q", emb)
	}
	if head, _ := lay.StoredHead(true); head != "" {
		t.Errorf("tied with both: head %q", head)
	}
}

func TestMissingTensorErrors(t *testing.T) {
	lay, err := Detect([]string{"model.language_model.layers.0.mlp.up_proj.weight", "model.language_model.norm.weight"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		want []string
	}{
		{"embedding, tied", second(lay.StoredEmbedding(true)), []string{`"model.language_model.embed_tokens.weight" is missing`, `prefix "model.language_model."`, `tied head "lm_head.weight"`}},
		{"embedding, untied", second(lay.StoredEmbedding(false)), []string{`"model.language_model.embed_tokens.weight" is missing`, `prefix "model.language_model."`}},
		{"head, untied", second(lay.StoredHead(false)), []string{`"lm_head.weight" is missing`, `prefix "model.language_model."`, "tie_word_embeddings"}},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(c.err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, c.err, w)
			}
		}
	}
	// No decoder tensors at all: the error names every prefix tried.
	_, err = Detect([]string{"transformer.h.0.attn.c_attn.weight", "transformer.wte.weight"})
	if err == nil {
		t.Fatal("Detect accepted a GPT-2 checkpoint")
	}
	for _, p := range Prefixes() {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name prefix %q", err, p)
		}
	}
	if !strings.Contains(err.Error(), `"transformer.h.0.attn.c_attn.weight"`) {
		t.Errorf("error %q shows no example tensor", err)
	}
	if _, err := Detect(nil); err == nil {
		t.Error("Detect accepted no tensors")
	}
}

func second(_ string, err error) error { return err }

func TestHostileNamesBounded(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	// An unknown prefix is never adopted, and the error does not echo a
	// megabyte of name.
	_, err := Detect([]string{huge + "embed_tokens.weight", "../../etc/embed_tokens.weight"})
	if err == nil || len(err.Error()) > 1024 {
		t.Fatalf("error of %d bytes: %.200v", len(fmt.Sprint(err)), err)
	}
	lay := WithPrefix("model.")
	for _, name := range []string{
		"model.layers.99999999999999999999999.self_attn.q_proj.weight", // overflows int
		"model.layers.1048577.self_attn.q_proj.weight",                 // past maxLayer
		"model.layers.-1.self_attn.q_proj.weight",
		"model.layers.+1.self_attn.q_proj.weight",
		"model.layers.01.self_attn.q_proj.weight",
		"model.layers..self_attn.q_proj.weight",
		"model.layers.1",
		"model.layers.1.",
		"model.layers.1.self_attn.q_proj.weight.extra",
		"model.layers.1." + huge,
		"",
	} {
		if l, k, ok := lay.Role(name); ok {
			t.Errorf("Role(%.80q) = %d %s", name, l, k)
		}
	}
	if l, _, ok := lay.Role("model.layers.1048576.mlp.up_proj.weight"); !ok || l != 1<<20 {
		t.Errorf("the largest layer index is refused: %d %v", l, ok)
	}
	var zero Layout
	if _, _, ok := zero.Role("layers.0.mlp.up_proj.weight"); ok {
		t.Error("the zero Layout names tensors")
	}
	_, err = WithPrefix("model.").StoredHead(false)
	if err == nil || strings.Contains(err.Error(), huge) {
		t.Errorf("StoredHead: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"model.layers.0.self_attn.q_proj.weight", "lm_head.weight", "llm.model.norm.weight",
		"model.language_model.layers.12.mlp.down_proj.weight", "model.layers.9999999999.mlp.up_proj.weight", "language_model.lm_head.weight"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		layer, k, ok := Parse(name)
		if !ok {
			return
		}
		// Whatever Parse accepts is exactly a name the tables spell.
		lay, err := Detect([]string{name})
		if err != nil {
			t.Fatalf("Parse accepts %q but Detect finds no root: %v", name, err)
		}
		back := lay.Name(k)
		if layer >= 0 {
			back = lay.LayerName(layer, k)
		}
		if back != name || layer > maxLayer {
			t.Fatalf("Parse(%q) = layer %d %s, which is named %q", name, layer, k, back)
		}
	})
}

func TestDetectCheckpoint(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var srcs []safetensors.Source
	for _, n := range []string{"model.language_model.embed_tokens.weight", "model.language_model.layers.0.mlp.up_proj.weight", "model.vision_tower.patch_embed.weight"} {
		srcs = append(srcs, safetensors.Source{Name: n, DType: safetensors.F32, Shape: []int64{2}, WriteTo: safetensors.FromBytes(make([]byte, 8))})
	}
	if err := safetensors.Write(f, nil, srcs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	lay, err := DetectCheckpoint(ck)
	if err != nil || lay.Prefix != "model.language_model." {
		t.Fatalf("%+v %v", lay, err)
	}
	if emb, err := lay.StoredEmbedding(true); err != nil || emb != "model.language_model.embed_tokens.weight" {
		t.Errorf("embedding %q %v", emb, err)
	}
}
