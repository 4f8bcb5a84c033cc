package pulsar2

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/patch"
)

// Defaults (axera.md §4): 128-token prefill chunks; parallel 8 as in the
// docs. The KV-cache length's default is patch.DefaultKVLen.
const (
	DefaultChip       = "AX650"
	DefaultPrefillLen = 128
	DefaultParallel   = 8
)

// plan is everything decided before the container runs.
type plan struct {
	cfg          *hfconfig.Config
	text         *hfconfig.Config
	modelDir     string // absolute
	chip         string
	kv           int
	prefill      int
	groups       []int // --last_kv_cache_len values (llm_build), multiples of prefill
	maxPrefill   int
	parallel     int
	checkLevel   int
	weightType   string
	quant        string // "gptq-int4", "awq-int4", … or ""
	shim         ShimOptions
	embedName    string
	vocab        int
	hidden       int
	modelName    string
	tokType      string
	tokenizerTxt string // the model directory's own axllm tokenizer file, if any
	mountRoot    string // host directory mounted at ctrModel
	inputPath    string // the model's path inside the container
	uid, gid     int    // who edgectl runs as: docker gets --user for non-root
	warnings     []string
	notes        []string
}

// preparePlan validates the model directory and the options. It has no side
// effects; every error it returns is an input fault.
func preparePlan(o BuildOptions) (*plan, error) {
	p := &plan{shim: o.Shim, uid: os.Getuid(), gid: os.Getgid()}
	if o.ModelDir == "" {
		return nil, inputErr("no model directory given", "pass MODEL_DIR, a Hugging Face checkpoint directory")
	}
	abs, err := filepath.Abs(o.ModelDir)
	if err != nil {
		return nil, inputErr(err.Error(), "")
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, inputErr(fmt.Sprintf("%s is not a directory", o.ModelDir), "pass a Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer)")
	}
	p.modelDir = abs
	cfg, err := hfconfig.Load(filepath.Join(abs, "config.json"))
	if err != nil {
		var le *hfconfig.LoadError
		if errors.As(err, &le) {
			return nil, inputErr(le.Path+": "+le.Msg, le.Fix)
		}
		return nil, inputErr(err.Error(), "")
	}
	p.cfg, p.text = cfg, cfg.Text()
	if p.text.NumHiddenLayers <= 0 || p.text.HiddenSize <= 0 {
		return nil, inputErr(fmt.Sprintf("%s: num_hidden_layers and hidden_size must be set (got %d, %d)", cfg.Path, p.text.NumHiddenLayers, p.text.HiddenSize),
			"restore the upstream config.json")
	}

	// Chip: one table of names (chips.go); AX8850 and the AX650 variants
	// are one NPU (axera.md §2).
	c, ok := ParseChip(o.Chip)
	if !ok {
		return nil, inputErr(fmt.Sprintf("unknown --chip %q", o.Chip), "use "+ChipNames)
	}
	if c.Note != "" {
		p.notes = append(p.notes, c.Note)
	}
	chip := c.Compiler
	p.chip = chip
	if chip == "LAMBERT" && !p.shim.AliasLambert {
		p.shim.AliasLambert = true
		p.notes = append(p.notes, "--chip LAMBERT: enabling the alias-lambert shim (pulsar2 has no LambertBackend)")
	}

	// KV cache: flag, then config.json kv_cache_len, then the default; the
	// compiler builds exactly that length, so one not of the form is refused.
	k := patch.NewKVLen(o.KVCacheLen, p.cfg)
	if !k.Exact() {
		return nil, inputErr(fmt.Sprintf("kv cache length %d (from %s) is not of the form 128·k−1", k.Asked, k.From),
			fmt.Sprintf("use %d (the runtime's mask has kv_cache_len+1 slots; `edgectl patch config --kv-cache-len %d` fixes config.json)", k.Len(), k.Asked))
	}
	kv := k.Asked
	p.kv = kv
	p.prefill = o.PrefillLen
	if p.prefill == 0 {
		p.prefill = DefaultPrefillLen
	}
	if p.prefill < 0 || p.prefill%16 != 0 || p.prefill > kv {
		return nil, inputErr(fmt.Sprintf("--prefill-len %d: want a positive multiple of 16 no larger than the kv cache (%d)", p.prefill, kv), "the docs use 128")
	}
	p.maxPrefill = o.MaxPrefill
	if p.maxPrefill == 0 {
		p.maxPrefill = (kv + 1) / 2 / p.prefill * p.prefill
	}
	if p.maxPrefill < 0 || p.maxPrefill%p.prefill != 0 || p.maxPrefill > kv+1-p.prefill {
		return nil, inputErr(fmt.Sprintf("--max-prefill %d: want a multiple of --prefill-len %d no larger than %d (kv cache %d + 1 − prefill)", p.maxPrefill, p.prefill, kv+1-p.prefill, kv),
			"AXERA's 2047 builds use 1152; the default is half the kv cache")
	}
	for g := p.prefill; g <= p.maxPrefill; g += p.prefill {
		p.groups = append(p.groups, g)
	}
	p.checkLevel = o.CheckLevel
	p.parallel = o.Parallel
	if p.parallel == 0 {
		p.parallel = min(DefaultParallel, runtime.NumCPU())
	}

	// Weights: GPTQ/AWQ int4 → s4; other quantizations pulsar2 cannot read.
	q := p.cfg.QuantizationConfig
	if q == nil {
		q = p.text.QuantizationConfig
	}
	p.weightType = "s8"
	if q != nil {
		method, _ := q["quant_method"].(string)
		bits, _ := q["bits"].(float64)
		switch {
		case (method == "gptq" || method == "awq") && (bits == 4 || bits == 8):
			p.quant = fmt.Sprintf("%s-int%d", method, int(bits))
			if bits == 4 {
				p.weightType = "s4"
			}
			if _, ok := q["group_size"]; !ok {
				if _, err := p.stop(o, &BuildError{Kind: FailInput, Msg: fmt.Sprintf("%s: quantization_config has no group_size; pulsar2 fails with KeyError 'group_size'", cfg.Path),
					Fix: "add \"group_size\": 128 (the GPTQ default) to quantization_config, or use the quantize_config.json the checkpoint was made with"}); err != nil {
					return nil, err
				}
			}
		default:
			return nil, inputErr(fmt.Sprintf("%s: quantization_config quant_method %q bits %v: pulsar2 reads float, GPTQ and AWQ (int4/int8) checkpoints only", cfg.Path, method, q["bits"]),
				"use the unquantized checkpoint or a GPTQ/AWQ int4 export")
		}
	}
	if o.WeightType != "" {
		switch o.WeightType {
		case "fp16", "bf16", "fp32", "s8", "s4", "fp8_e5m2", "fp8_e4m3":
		default:
			return nil, inputErr(fmt.Sprintf("--weight-type %q", o.WeightType), "use s8, s4, bf16, fp16, fp32, fp8_e5m2 or fp8_e4m3")
		}
		p.weightType = o.WeightType
	}
	if dt := strings.ToLower(p.cfg.WeightDType()); (dt == "float32" || dt == "fp32") && !p.shim.FP32AsBF16 {
		p.warnings = append(p.warnings, "checkpoint is float32: if pulsar2 fails with a KeyError in get_ifm_dtype, rebuild with --fp32-as-bf16")
	}

	// The embedding must exist and match the config (ax-llm#62: a
	// tokens_embed_size mismatch makes the build fail silently).
	if err := p.checkEmbedding(abs); err != nil {
		if _, err := p.stop(o, err); err != nil {
			return nil, err
		}
	}

	p.modelName = o.ModelName
	if p.modelName == "" {
		p.modelName = modelNameFromPath(abs)
	}
	p.tokType = o.TokenizerType
	if p.tokType == "" {
		if p.tokType, err = TokenizerType(p.cfg, p.modelName); err != nil {
			if _, err := p.stop(o, err); err != nil {
				return nil, err
			}
		}
	}
	// axllm needs its own tokenizer file: the model's, or one exported from
	// tokenizer.json (byte-level or SentencePiece BPE). Check now, not after
	// the compile.
	matches, _ := filepath.Glob(filepath.Join(abs, "*tokenizer*.txt"))
	for _, m := range matches {
		if axllm.IsTokenizerTxt(m) {
			p.tokenizerTxt = m
			break
		}
	}
	if p.tokenizerTxt == "" {
		if err := axllm.CheckTokenizerExport(filepath.Join(abs, "tokenizer.json")); err != nil {
			if _, err := p.stop(o, inputErr(err.Error(), "axllm reads its own tokenizer file: put the model's *_tokenizer.txt from AXERA's model repos into "+o.ModelDir)); err != nil {
				return nil, err
			}
		}
	}
	if p.mountRoot, p.inputPath, err = modelMount(abs); err != nil {
		return nil, inputErr(err.Error(), "")
	}
	return p, nil
}

// stop returns err, or, in a dry run, records it as a warning and returns
// nil: a dry run prints the command and every problem the real run would
// stop on (the command does not depend on these checks).
func (p *plan) stop(o BuildOptions, err error) (*plan, error) {
	if !o.DryRun {
		return nil, err
	}
	msg := err.Error()
	var be *BuildError
	if errors.As(err, &be) && be.Fix != "" {
		msg += " (fix: " + be.Fix + ")"
	}
	p.warnings = append(p.warnings, "the real run would stop: "+msg)
	return p, nil
}

// checkEmbedding finds the token embedding and checks it against the
// config (ax-llm#62: a tokens_embed_size mismatch fails the build silently).
func (p *plan) checkEmbedding(abs string) error {
	ck, err := safetensors.OpenCheckpoint(abs)
	if err != nil {
		return inputErr(err.Error(), "the checkpoint needs its .safetensors weights")
	}
	defer ck.Close()
	_, et, err := FindEmbedding(ck, p.text.Tied())
	if err != nil {
		return inputErr(err.Error(), "")
	}
	p.embedName = et.Name
	p.vocab, p.hidden = int(et.Shape[0]), int(et.Shape[1])
	if p.hidden != p.text.HiddenSize {
		return inputErr(fmt.Sprintf("%s: embedding %q is [%d, %d] but hidden_size is %d", ck.Dir, et.Name, p.vocab, p.hidden, p.text.HiddenSize),
			"the config and the weights disagree: restore the upstream config.json")
	}
	if p.text.VocabSize > 0 && p.vocab != p.text.VocabSize {
		p.warnings = append(p.warnings, fmt.Sprintf("embedding has %d rows but vocab_size is %d: tokens_embed_num uses the embedding's %d", p.vocab, p.text.VocabSize, p.vocab))
	}

	return nil
}

// modelNameFromPath names a model after its directory, or after the repo id
// when the directory is a Hugging Face cache snapshot
// (…/models--Org--Name/snapshots/<rev>).
func modelNameFromPath(dir string) string {
	parts := strings.Split(filepath.ToSlash(dir), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if rest, ok := strings.CutPrefix(parts[i], "models--"); ok {
			return strings.Replace(rest, "--", "/", 1)
		}
	}
	return filepath.Base(dir)
}

// modelMount picks the host directory to mount for the model: the model
// directory itself, or, when its files are symlinks (a Hugging Face cache
// snapshot pointing into ../../blobs), the closest directory holding both
// the links and their targets, so the links resolve inside the container.
func modelMount(dir string) (root, inside string, err error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", "", err
	}
	root = real
	ents, err := os.ReadDir(real)
	if err != nil {
		return "", "", err
	}
	for _, e := range ents {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(filepath.Join(real, e.Name()))
		if err != nil {
			return "", "", fmt.Errorf("%s: broken symlink: %v", filepath.Join(dir, e.Name()), err)
		}
		for !within(target, root) {
			root = filepath.Dir(root)
		}
	}
	rel, _ := filepath.Rel(root, real)
	return root, filepath.ToSlash(filepath.Join(ctrModel, rel)), nil
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
