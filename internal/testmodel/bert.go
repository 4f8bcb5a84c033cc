package testmodel

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/safetensors"
)

// BertSpec describes a generated BERT-shaped encoder (BertModel naming,
// as all-MiniLM-L6-v2, bge-small and e5-small are saved): random weights,
// config.json, sentence-transformers' modules.json and 1_Pooling config,
// and a WordPiece tokenizer.json over Words.
type BertSpec struct {
	Hidden, FFN, Layers, Heads int // defaults 32, 4·Hidden, 2, 4
	MaxPos                     int // default 64
	Words                      []string
	// Pooling is the Pooling module's mode: "mean" (default) or "cls";
	// Normalize adds the Normalize module.
	Pooling   string
	Normalize bool
	// NoTokenizer leaves tokenizer.json out (inputs to the checkpoint
	// directory are then token ids).
	NoTokenizer bool
	// GGUF also writes NAME.gguf beside (llama.cpp's bert names, F32) with
	// the same weights and the vocabulary (always: llama.cpp loads no
	// GGUF without one); "" writes none.
	GGUF string
	Seed uint64
}

// BertSpecials are the generated vocabulary's first ids.
const (
	BertPAD  = 0
	BertUNK  = 1
	BertCLS  = 2
	BertSEP  = 3
	BertMASK = 4
)

// BertVocab is the vocabulary WriteBert gives the spec: the special
// tokens, then the words, then "##" continuations of their letters.
func (s *BertSpec) BertVocab() []string {
	v := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	seen := map[string]bool{}
	for _, t := range v {
		seen[t] = true
	}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			v = append(v, t)
		}
	}
	for _, w := range s.Words {
		add(w)
	}
	for _, c := range "abcdefghijklmnopqrstuvwxyz.,!?" {
		add(string(c))
		add("##" + string(c))
	}
	return v
}

func (s *BertSpec) bertDefaults() {
	if s.Hidden == 0 {
		s.Hidden = 32
	}
	if s.FFN == 0 {
		s.FFN = 4 * s.Hidden
	}
	if s.Layers == 0 {
		s.Layers = 2
	}
	if s.Heads == 0 {
		s.Heads = 4
	}
	if s.MaxPos == 0 {
		s.MaxPos = 64
	}
	if s.Pooling == "" {
		s.Pooling = "mean"
	}
}

// BertTensor is one generated tensor in Hugging Face naming, with its
// llama.cpp name and values (row-major, shape [rows, cols] or [n]).
type BertTensor struct {
	Name, GGUFName string
	Shape          []int64
	Values         []float32
}

// BertTensors generates the spec's weights (seeded): products with
// 1/√fan-in spread, LayerNorm weights near 1, biases small.
func (s *BertSpec) BertTensors() []BertTensor {
	s.bertDefaults()
	rng := rand.New(rand.NewPCG(s.Seed, 0xbe27))
	H, F, V := s.Hidden, s.FFN, len(s.BertVocab())
	var out []BertTensor
	mk := func(name, gname string, std, mean float64, shape ...int64) {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(mean + std*rng.NormFloat64())
		}
		out = append(out, BertTensor{Name: name, GGUFName: gname, Shape: shape, Values: vals})
	}
	mk("embeddings.word_embeddings.weight", "token_embd.weight", 0.5, 0, int64(V), int64(H))
	mk("embeddings.position_embeddings.weight", "position_embd.weight", 0.2, 0, int64(s.MaxPos), int64(H))
	mk("embeddings.token_type_embeddings.weight", "token_types.weight", 0.2, 0, 2, int64(H))
	mk("embeddings.LayerNorm.weight", "token_embd_norm.weight", 0.1, 1, int64(H))
	mk("embeddings.LayerNorm.bias", "token_embd_norm.bias", 0.1, 0, int64(H))
	for l := range s.Layers {
		p, g := fmt.Sprintf("encoder.layer.%d.", l), fmt.Sprintf("blk.%d.", l)
		for _, t := range []struct {
			hf, gg     string
			rows, cols int
		}{
			{"attention.self.query", "attn_q", H, H}, {"attention.self.key", "attn_k", H, H},
			{"attention.self.value", "attn_v", H, H}, {"attention.output.dense", "attn_output", H, H},
			{"intermediate.dense", "ffn_up", F, H}, {"output.dense", "ffn_down", H, F},
		} {
			mk(p+t.hf+".weight", g+t.gg+".weight", 1/math.Sqrt(float64(t.cols)), 0, int64(t.rows), int64(t.cols))
			mk(p+t.hf+".bias", g+t.gg+".bias", 0.05, 0, int64(t.rows))
		}
		mk(p+"attention.output.LayerNorm.weight", g+"attn_output_norm.weight", 0.1, 1, int64(H))
		mk(p+"attention.output.LayerNorm.bias", g+"attn_output_norm.bias", 0.1, 0, int64(H))
		mk(p+"output.LayerNorm.weight", g+"layer_output_norm.weight", 0.1, 1, int64(H))
		mk(p+"output.LayerNorm.bias", g+"layer_output_norm.bias", 0.1, 0, int64(H))
	}
	return out
}

// WriteBert writes the encoder checkpoint into dir.
func WriteBert(dir string, s BertSpec) error {
	s.bertDefaults()
	if err := os.MkdirAll(filepath.Join(dir, "1_Pooling"), 0o755); err != nil {
		return err
	}
	vocab := s.BertVocab()
	cfg := map[string]any{
		"architectures": []string{"BertModel"}, "model_type": "bert",
		"hidden_size": s.Hidden, "intermediate_size": s.FFN, "num_hidden_layers": s.Layers,
		"num_attention_heads": s.Heads, "vocab_size": len(vocab), "max_position_embeddings": s.MaxPos,
		"type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu", "pad_token_id": 0,
		"position_embedding_type": "absolute", "torch_dtype": "float32",
	}
	mods := []map[string]any{
		{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
		{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
	}
	if s.Normalize {
		mods = append(mods, map[string]any{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
	}
	pool := map[string]any{"word_embedding_dimension": s.Hidden,
		"pooling_mode_cls_token": s.Pooling == "cls", "pooling_mode_mean_tokens": s.Pooling == "mean",
		"pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false}
	files := map[string]any{"config.json": cfg, "modules.json": mods, filepath.Join("1_Pooling", "config.json"): pool}
	if !s.NoTokenizer {
		files["tokenizer.json"] = wordPieceJSON(vocab)
		files["tokenizer_config.json"] = map[string]any{"do_lower_case": true, "model_max_length": s.MaxPos,
			"cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]", "mask_token": "[MASK]",
			"tokenizer_class": "BertTokenizer"}
	}
	for name, v := range files {
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	ts := s.BertTensors()
	var srcs []safetensors.Source
	for _, t := range ts {
		srcs = append(srcs, safetensors.Source{Name: t.Name, DType: safetensors.F32, Shape: t.Shape, WriteTo: safetensors.FromBytes(f32Bytes(t.Values))})
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return err
	}
	if err := safetensors.Write(f, map[string]string{"format": "pt"}, srcs); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if s.GGUF != "" {
		return writeBertGGUF(s.GGUF, &s, ts)
	}
	return nil
}

// writeBertGGUF writes the same weights as llama.cpp's converter names
// them (F32; ne reversed from the shape).
func writeBertGGUF(path string, s *BertSpec, ts []BertTensor) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := gguf.NewWriter(f)
	pooling := uint32(1)
	if s.Pooling == "cls" {
		pooling = 2
	}
	type kv struct {
		k string
		v any
	}
	// The vocabulary goes in as llama.cpp's converter writes a BERT's
	// (llama.cpp loads no GGUF without tokenizer.ggml.model and tokens):
	// "bert" selects its WordPiece tokenizer, whose default special ids
	// (bert-base's 101, 102, 100, 0, 103) this vocabulary does not have,
	// so each is named; the token-type count sizes token_types.weight,
	// which llama.cpp checks against the tensor's shape.
	vocab := s.BertVocab()
	types := make([]int32, len(vocab))
	for i := range types {
		types[i] = 1 // normal
	}
	types[BertUNK] = 2
	for _, id := range []int{BertPAD, BertCLS, BertSEP, BertMASK} {
		types[id] = 3 // control
	}
	kvs := []kv{
		{"general.architecture", "bert"}, {"bert.context_length", uint32(s.MaxPos)}, {"bert.embedding_length", uint32(s.Hidden)},
		{"bert.feed_forward_length", uint32(s.FFN)}, {"bert.attention.head_count", uint32(s.Heads)}, {"bert.block_count", uint32(s.Layers)},
		{"bert.attention.layer_norm_epsilon", float32(1e-12)}, {"bert.attention.causal", false}, {"bert.pooling_type", pooling},
		{"tokenizer.ggml.model", "bert"}, {"tokenizer.ggml.tokens", vocab}, {"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.token_type_count", uint32(2)},
		{"tokenizer.ggml.bos_token_id", uint32(BertCLS)}, {"tokenizer.ggml.cls_token_id", uint32(BertCLS)},
		{"tokenizer.ggml.seperator_token_id", uint32(BertSEP)}, {"tokenizer.ggml.unknown_token_id", uint32(BertUNK)},
		{"tokenizer.ggml.padding_token_id", uint32(BertPAD)}, {"tokenizer.ggml.mask_token_id", uint32(BertMASK)},
	}
	for _, kv := range kvs {
		if err := w.Set(kv.k, kv.v); err != nil {
			f.Close()
			return err
		}
	}
	for _, t := range ts {
		ne := make([]int64, len(t.Shape))
		for i, d := range t.Shape {
			ne[len(t.Shape)-1-i] = d
		}
		if err := w.AddTensor(t.GGUFName, gguf.TypeF32, ne...); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.WriteHeader(); err != nil {
		f.Close()
		return err
	}
	for _, t := range ts {
		if _, err := w.Write(f32Bytes(t.Values)); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Finish(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// wordPieceJSON is a tokenizer.json as transformers writes BERT's:
// BertNormalizer, BertPreTokenizer, WordPiece with "##" continuations and
// the [CLS] $A [SEP] template.
func wordPieceJSON(vocab []string) map[string]any {
	ids := map[string]int{}
	for i, t := range vocab {
		ids[t] = i
	}
	var added []map[string]any
	for i, t := range vocab[:5] {
		added = append(added, map[string]any{"id": i, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	return map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}, map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 1}}},
			"special_tokens": map[string]any{"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{BertCLS}, "tokens": []string{"[CLS]"}},
				"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{BertSEP}, "tokens": []string{"[SEP]"}}}},
		"decoder": map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model":   map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": ids},
	}
}
