package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/patch"
	"github.com/edgectl/edgectl/pulsar2"
)

// checkConfig loads config.json; without a readable config no other check
// can run.
func (c *checker) checkConfig() bool {
	path := filepath.Join(c.dir, "config.json")
	cfg, err := hfconfig.Load(path)
	if err == nil {
		if err := cfg.Validate(); err != nil {
			// Sizes no model has: every later check would reason about
			// (or allocate from) them.
			c.add(Finding{ID: "config-dims", Severity: Blocking, Message: "config.json declares sizes no model has: the file is corrupt or hostile",
				Evidence: err.Error(), Fix: "restore it from the upstream repository: edgectl pull ORG/NAME --include config.json"})
			return false
		}
		c.cfg = cfg
		return true
	}
	var le *hfconfig.LoadError
	if !errors.As(err, &le) {
		c.add(Finding{ID: "config-unreadable", Severity: Blocking, Message: "config.json cannot be read", Evidence: err.Error()})
		return false
	}
	switch {
	case errors.Is(err, hfconfig.ErrEmpty) && isCompiledAxllm(c.dir):
		// A compiled ax-llm directory whose runtime config is a 0-byte stub:
		// the runtime dies with "parse error … empty input", and edgectl can
		// regenerate the file from the .axmodel files and the embedding.
		c.add(Finding{ID: "config-empty", Severity: Fixable, Message: "config.json is a 0-byte stub; axllm fails with \"parse error … empty input\"",
			Evidence: le.Error(), Fix: "edgectl pulsar2 axllm-config " + quote(c.dir) + " --in-place"})
	case errors.Is(err, hfconfig.ErrEmpty):
		c.add(Finding{ID: "config-empty", Severity: Blocking, Message: "config.json is empty; the runtime and the compiler need the model config",
			Evidence: le.Error(), Fix: "restore it from the upstream repository: edgectl pull ORG/NAME --include config.json"})
	case errors.Is(err, hfconfig.ErrMissing):
		c.add(Finding{ID: "config-missing", Severity: Blocking, Message: "no config.json", Evidence: le.Error(),
			Fix: "pull the full repository: edgectl pull ORG/NAME"})
	default:
		c.add(Finding{ID: "config-invalid", Severity: Blocking, Message: "config.json is not valid JSON", Evidence: le.Error(),
			Fix: "restore it from the upstream repository: edgectl pull ORG/NAME --include config.json"})
	}
	return false
}

// checkFamily warns when pulsar2 build has no ax-llm tokenizer_type for
// the model family (the build would stop before compiling).
func (c *checker) checkFamily() {
	if _, err := pulsar2.TokenizerType(c.cfg, filepath.Base(filepath.Clean(c.dir))); err != nil {
		c.add(Finding{ID: "family", Severity: Warning,
			Message:  "the ax-llm runtime has no tokenizer type for this model family",
			Evidence: fmt.Sprintf("model_type %q, architectures %v", c.cfg.ModelType, c.cfg.Architectures),
			Fix:      "pass --tokenizer-type to edgectl pulsar2 build if the runtime supports the family (Qwen3, Qwen2_5, Qwen3VL, Gemma4VL, SmolLM2, LLaMA)"})
	}
}

// eosConfigs yields the files that set eos_token_id: config.json, then
// generation_config.json where it reads.
func (c *checker) eosConfigs() iter.Seq2[string, *hfconfig.Config] {
	return func(yield func(string, *hfconfig.Config) bool) {
		if !yield("config.json", c.cfg) {
			return
		}
		if g, err := hfconfig.Load(filepath.Join(c.dir, "generation_config.json")); err == nil {
			yield("generation_config.json", g)
		}
	}
}

func (c *checker) checkEOS() {
	for name, cfg := range c.eosConfigs() {
		if !cfg.EosIsArray {
			continue
		}
		if len(cfg.EosTokenID) == 1 {
			c.add(Finding{ID: "eos-array", Severity: Fixable, Message: name + ": eos_token_id is a one-element array; some loaders read it as a number",
				Evidence: fmt.Sprintf("eos_token_id = %v", []int(cfg.EosTokenID)), Fix: c.fixCmd("patch config")})
			continue
		}
		c.add(Finding{ID: "eos-array", Severity: Fixable,
			Message:  name + ": eos_token_id is an array; the vendor gateway reads one id and generates forever",
			Evidence: fmt.Sprintf("eos_token_id = %v", []int(cfg.EosTokenID)), Fix: c.fixCmd("patch config")})
	}
	c.checkEndOfTurn()
}

// checkEndOfTurn flags a single eos id that is not the token the chat
// template closes assistant turns with: the runtime stops on eos only, so a
// Gemma 3 config left at <eos> (1) runs on past every <end_of_turn> (106).
// Arrays are eos-array's business (patch config picks the end-of-turn id).
func (c *checker) checkEndOfTurn() {
	eot, err := patch.FindEndOfTurn(c.dir)
	if errors.Is(err, patch.ErrNoTemplate) {
		return
	}
	if err != nil {
		c.add(Finding{ID: "chat-template-eos", Severity: Warning,
			Message:  "cannot tell which token the chat template ends assistant turns with; check that eos_token_id is that token",
			Evidence: err.Error(), Fix: c.fixCmd("patch config") + " --eos ID"})
		return
	}
	ids := patch.EOSIDs(c.dir, c.cfg)
	for name, cfg := range c.eosConfigs() {
		if cfg.EosIsArray || len(cfg.EosTokenID) != 1 || cfg.EosTokenID[0] == eot.ID {
			continue
		}
		f := Finding{ID: "eos-end-of-turn", Severity: Fixable,
			Message: fmt.Sprintf("%s: eos_token_id %d is not %q (%d), the token the chat template ends assistant turns with; the runtime would generate past the end of every reply",
				name, cfg.EosTokenID[0], eot.Token, eot.ID),
			Evidence: fmt.Sprintf("eos_token_id = %d; eos ids %v; the chat template renders the assistant's reply followed by %s", cfg.EosTokenID[0], ids, eot.Token),
			Fix:      fmt.Sprintf("%s --eos %d", c.fixCmd("patch config"), eot.ID)}
		if !slices.Contains(ids, eot.ID) {
			// Not listed as an eos anywhere: likely, but not surely, a chat
			// model whose config lost the id.
			f.Severity = Warning
			f.Message += " (it is not among the model's eos ids: check this is a chat model)"
		}
		c.add(f)
	}
}

func (c *checker) checkMoE() {
	t := c.cfg.Text()
	if n := t.Experts(); n > 0 {
		c.add(Finding{ID: "moe", Severity: Blocking, Message: "mixture-of-experts models are not supported by pulsar2 llm_build",
			Evidence: fmt.Sprintf("%d experts (num_experts/num_local_experts/n_routed_experts)", n),
			Fix:      "choose a dense model of the same family"})
	}
}

func (c *checker) checkRoPE() {
	t := c.cfg.Text()
	if t.RopeScaling == nil {
		return
	}
	if sec, ok := t.RopeScaling["mrope_section"]; ok {
		c.add(Finding{ID: "mrope", Severity: Warning, Message: "multimodal RoPE (mRoPE): needs a recent ax-llm runtime (mrope.cpp) and pulsar2 with rs_mrope_section",
			Evidence: fmt.Sprintf("rope_scaling.mrope_section = %v", sec)})
	}
	if typ, _ := t.RopeScaling["rope_type"].(string); typ != "" && typ != "default" && typ != "llama3" {
		c.add(Finding{ID: "rope-scaling", Severity: Warning, Message: "RoPE scaling type " + typ + " may not be implemented by the compiler",
			Evidence: fmt.Sprintf("rope_scaling = %v", t.RopeScaling)})
	}
}

func (c *checker) checkKVLen() {
	k := patch.NewKVLen(c.opts.KVCacheLen, c.cfg)
	if k.Defaulted() {
		c.add(Finding{ID: "kv-cache-len", Severity: Info, Message: fmt.Sprintf("no kv_cache_len recorded; pulsar2 build will use %d", k.Asked),
			Evidence: "config.json has no kv_cache_len"})
		return
	}
	n := k.Asked
	if !k.Exact() {
		c.add(Finding{ID: "kv-cache-len", Severity: Fixable,
			Message:  fmt.Sprintf("KV-cache length %d is not of the form 128·k−1; the runtime adds a slot for the current token, so use %d", n, k.Len()),
			Evidence: fmt.Sprintf("%s = %d", k.From, n),
			Fix:      c.fixCmd(fmt.Sprintf("patch config --kv-cache-len %d", n))})
	}
	if max := c.cfg.Text().MaxPositionEmbeddings; max > 0 && n > max {
		c.add(Finding{ID: "kv-cache-len-too-long", Severity: Warning,
			Message:  fmt.Sprintf("KV-cache length %d exceeds max_position_embeddings %d", n, max),
			Evidence: fmt.Sprintf("%s = %d", k.From, n)})
	}
}

// compilerDTypes are the weight dtypes pulsar2's llm_build reads.
var compilerDTypes = map[safetensors.DType]bool{safetensors.F16: true, safetensors.BF16: true, safetensors.F32: true,
	safetensors.I32: true, safetensors.I8: true, safetensors.U8: true}

func (c *checker) checkDTypes() {
	bad := map[safetensors.DType][]string{}
	f32 := 0
	for _, t := range c.ck.Tensors() {
		if !compilerDTypes[t.DType] {
			bad[t.DType] = append(bad[t.DType], t.Name)
		}
		if t.DType == safetensors.F32 && len(t.Shape) == 2 {
			f32++
		}
	}
	for _, dt := range sortedKeys(bad) {
		names := bad[dt]
		c.add(Finding{ID: "dtype", Severity: Blocking,
			Message:  fmt.Sprintf("%d tensors are %s, which pulsar2 cannot read", len(names), dt),
			Evidence: fmt.Sprintf("e.g. %s is %s", names[0], dt),
			Fix:      "dequantize to BF16 first (FP8/FP4 checkpoints have BF16 siblings on the Hub)"})
	}
	if f32 > 0 {
		c.add(Finding{ID: "fp32-weights", Severity: Warning,
			Message:  "float32 weights: pulsar2 hits a KeyError in its dtype table on FP32 inputs",
			Evidence: fmt.Sprintf("%d 2-D tensors are F32", f32),
			Fix:      "build with the shim's --fp32-as-bf16 (edgectl pulsar2 build does), or convert the weights to BF16"})
	}
}

func (c *checker) checkQuantization() {
	q := c.cfg.QuantizationConfig
	if q == nil {
		if c.cfg.Text().ModelType == "bitnet" {
			return // ternary models take the quant/sherry path, not GPTQ
		}
		c.add(Finding{ID: "quantization", Severity: Quantize,
			Message:  "float weights without a GPTQ/AWQ quantization_config (group size 128): int4 builds need quantized weights",
			Evidence: "config.json has no quantization_config",
			Fix:      fmt.Sprintf("edgectl quant pack %s -o %s --format gptq-int4 (or build w8a16 with pulsar2 -w s8)", quote(c.dir), quote(strings.TrimRight(c.dir, "/")+"-gptq"))})
		return
	}
	method, _ := q["quant_method"].(string)
	bits, _ := q["bits"].(float64)
	group, hasGroup := q["group_size"].(float64)
	switch {
	case method != "gptq" && method != "awq":
		c.add(Finding{ID: "quantization", Severity: Blocking,
			Message:  fmt.Sprintf("quantization method %q is not one pulsar2 reads (GPTQ or AWQ)", method),
			Evidence: fmt.Sprintf("quantization_config = %v", q), Fix: "start from the float checkpoint and run edgectl quant pack --format gptq-int4"})
	case !hasGroup:
		c.add(Finding{ID: "quantization", Severity: Fixable,
			Message:  "quantization_config has no group_size; the build fails with KeyError: 'group_size'",
			Evidence: fmt.Sprintf("quantization_config = %v", q), Fix: "add \"group_size\": 128 to quantization_config if the weights use groups of 128, else re-quantize with edgectl quant pack --format gptq-int4"})
	case group != 128 || bits != 4:
		c.add(Finding{ID: "quantization", Severity: Quantize,
			Message:  fmt.Sprintf("%s %g-bit group %g: the compiler expects 4-bit, group size 128", method, bits, group),
			Evidence: fmt.Sprintf("quantization_config = %v", q), Fix: "re-quantize from the float checkpoint: edgectl quant pack --format gptq-int4"})
	}
}

func (c *checker) checkNorms() {
	lay, err := hflayout.DetectCheckpoint(c.ck)
	if err != nil {
		return // no decoder tensors at all: checkVocab reports it
	}
	have := map[string]bool{}
	for _, t := range c.ck.Tensors() {
		have[t.Name] = true
	}
	expected, err := patch.ExpectedNorms(c.cfg, lay.Prefix)
	if err != nil {
		c.add(Finding{ID: "dims", Severity: Blocking, Message: "config lacks model dimensions", Evidence: err.Error()})
		return
	}
	missing := patch.Missing(expected, have)
	if len(missing) == 0 {
		return
	}
	c.add(Finding{ID: "layernorm-missing", Severity: Fixable,
		Message:  fmt.Sprintf("%d norm tensors are missing; the compiler's tiler rejects the topology", len(missing)),
		Evidence: fmt.Sprintf("e.g. %s", missing[0].Name), Fix: c.fixCmd("patch layernorm")})
}

func (c *checker) checkVocab() {
	t := c.cfg.Text()
	lay, err := hflayout.DetectCheckpoint(c.ck)
	if err != nil {
		c.add(Finding{ID: "embedding-missing", Severity: Blocking, Message: "no embedding tensor", Evidence: err.Error()})
		return
	}
	name, err := lay.StoredEmbedding(t.Tied())
	if err != nil {
		c.add(Finding{ID: "embedding-missing", Severity: Blocking, Message: "no embedding tensor", Evidence: err.Error()})
		return
	}
	_, emb, _ := c.ck.Lookup(name)
	if want := lay.Name(hflayout.Embedding); name != want {
		// Tied checkpoints sometimes store the shared matrix only once, as
		// the head (TinyStories does).
		c.add(Finding{ID: "embedding-tied", Severity: Warning,
			Message:  "the tied embedding is stored only as " + name + "; tools that look for " + want + " miss it",
			Evidence: fmt.Sprintf("%s %v, tie_word_embeddings true, no %s", name, emb.Shape, want),
			Fix:      "edgectl pulsar2 build reads the embedding from " + name + " in this case"})
	}
	if len(emb.Shape) != 2 {
		c.add(Finding{ID: "embedding-shape", Severity: Blocking, Message: "embedding is not 2-D", Evidence: fmt.Sprintf("%s shape %v", emb.Name, emb.Shape)})
		return
	}
	rows, hidden := emb.Shape[0], emb.Shape[1]
	if int(hidden) != t.HiddenSize {
		c.add(Finding{ID: "embedding-hidden", Severity: Blocking,
			Message:  "embedding width differs from hidden_size; pulsar2 builds it silently wrong (tokens_embed_size mismatch)",
			Evidence: fmt.Sprintf("%s shape %v, hidden_size %d", emb.Name, emb.Shape, t.HiddenSize)})
	}
	if t.VocabSize > 0 && int(rows) != t.VocabSize {
		sev, msg := Blocking, "embedding has fewer rows than vocab_size"
		if int(rows) > t.VocabSize {
			sev, msg = Warning, "embedding has more rows than vocab_size (padded); the runtime's tokens_embed_num must use the row count"
		}
		c.add(Finding{ID: "vocab-size", Severity: sev, Message: msg,
			Evidence: fmt.Sprintf("%s shape %v, vocab_size %d", emb.Name, emb.Shape, t.VocabSize)})
	}
	if _, head, ok := c.ck.Lookup(lay.Head); ok && len(head.Shape) == 2 && head.Shape[0] != rows {
		c.add(Finding{ID: "lm-head-shape", Severity: Blocking, Message: "lm_head and embedding disagree on the vocabulary size",
			Evidence: fmt.Sprintf("%s %v, %s %v", lay.Head, head.Shape, emb.Name, emb.Shape)})
	}
}

func (c *checker) checkTokenizer() {
	tok, tc, err := c.tokenizer()
	if errors.Is(err, fs.ErrNotExist) {
		c.add(Finding{ID: "tokenizer-missing", Severity: Warning, Message: "no tokenizer.json; the runtime needs the tokenizer files",
			Evidence: filepath.Join(c.dir, "tokenizer.json"), Fix: "edgectl pull ORG/NAME --include 'tokenizer*'"})
		return
	}
	if tok == nil {
		c.add(Finding{ID: "tokenizer-invalid", Severity: Blocking, Message: "tokenizer.json cannot be used: no runtime can load this model",
			Evidence: err.Error(), Fix: "restore it from the upstream repository: edgectl pull ORG/NAME --include 'tokenizer*'"})
		return
	}
	n := len(tok.Tokens())
	if v := c.cfg.Text().VocabSize; v > 0 && n > v {
		c.add(Finding{ID: "tokenizer-vocab", Severity: Blocking, Message: "the tokenizer has more tokens than the model's vocabulary",
			Evidence: fmt.Sprintf("tokenizer.json has %d tokens, vocab_size %d", n, v)})
	}
	if tc != nil && tc.EOSToken != "" {
		if _, ok := tok.ID(tc.EOSToken); !ok {
			c.add(Finding{ID: "eos-token", Severity: Warning, Message: "tokenizer_config.json names an eos_token the tokenizer does not have",
				Evidence: fmt.Sprintf("eos_token %q", tc.EOSToken)})
		}
	}
}

func sortedKeys[V any](m map[safetensors.DType]V) []safetensors.DType {
	out := make([]safetensors.DType, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
