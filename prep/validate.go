package prep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/doctor"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/format/tokjson"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/patch"
)

// unloadable are doctor's findings that no target survives: the model
// cannot be read at all, whatever runs it next. (Doctor's other blocking
// findings are about pulsar2 and matter to the ax650 target only, where
// doctorStep makes them fatal.)
var unloadable = map[string]bool{
	"config-unreadable": true, "config-empty": true, "config-missing": true, "config-invalid": true,
	"no-weights": true, "bad-weights": true, "dims": true,
	"embedding-missing": true, "embedding-shape": true, "embedding-hidden": true,
	"vocab-size": true, "lm-head-shape": true, "tokenizer-vocab": true,
}

// decoderFamilies are the llama-style decoders whose tensors the packers
// (quant, sherry) and the CPU engine read by name; for them a missing
// projection or norm is known to make the model unloadable.
var decoderFamilies = map[string]bool{"llama": true, "mistral": true, "qwen2": true, "qwen3": true, "bitnet": true}

// decoderProjections are the tensors every layer of a decoderFamilies model has.
var decoderProjections = []hflayout.Kind{hflayout.Q, hflayout.K, hflayout.V, hflayout.O, hflayout.Gate, hflayout.Up, hflayout.Down}

// validate checks that the checkpoint in dir can be loaded at all: a config
// with an architecture and positive dimensions, a readable tokenizer, every
// tensor the config implies (norm tensors only with norms: ax650's
// layernorm step adds missing ones), finite weights, and doctor's findings that
// make any load fail. The problems come back as one input error (exit 1)
// that names the files in dir; warnings come back as findings.
func validate(dir string, norms bool) ([]artifact.Finding, error) {
	var probs, warns []string
	cfg, err := hfconfig.Load(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, err) // hfconfig's errors say where and how to fix
	}
	if n := cfg.Text().Experts(); n > 0 {
		return nil, blockedErr("%s declares %d experts: mixture-of-experts models are not supported by edgectl's targets", cfg.Path, n)
	}
	probs = append(probs, checkConfig(cfg)...)
	if len(probs) > 0 {
		// Without sane dimensions nothing below can be judged (nor sized).
		return nil, inputErr("%s", strings.Join(probs, "; "))
	}

	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return nil, inputErr("%v: download the checkpoint again", err)
	}
	defer ck.Close()
	t := cfg.Text()
	probs = append(probs, checkTensors(ck, cfg, norms)...)
	tp, tw := checkTokenizer(dir, t.VocabSize)
	probs, warns = append(probs, tp...), append(warns, tw...)
	if len(probs) > 0 {
		return nil, inputErr("%s", strings.Join(probs, "; "))
	}
	// Doctor runs on sizes already checked against the files.
	r, err := doctor.Check(dir, doctor.Options{Target: "ax650"})
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, err)
	}
	for _, f := range r.Findings {
		if f.Severity == doctor.Blocking && unloadable[f.ID] {
			probs = append(probs, fmt.Sprintf("%s (%s)", f.Message, f.Evidence))
		}
	}
	if len(probs) > 0 {
		return nil, inputErr("%s", strings.Join(probs, "; "))
	}
	if err := checkFinite(ck); err != nil {
		return nil, errkind.Wrap(errkind.Input, err)
	}

	findings := []artifact.Finding{{Severity: "info", Code: "checkpoint",
		Message: fmt.Sprintf("%s, %d tensors, %d bytes of weights, all finite", cfg.Arch(), len(ck.Tensors()), ck.TensorBytes())}}
	for _, w := range warns {
		findings = append(findings, artifact.Finding{Severity: "warning", Code: "tokenizer", Message: w})
	}
	return findings, nil
}

// checkConfig reports what makes config.json describe no loadable model.
func checkConfig(cfg *hfconfig.Config) []string {
	t := cfg.Text()
	if cfg.ModelType == "" && t.ModelType == "" && len(cfg.Architectures) == 0 {
		return []string{fmt.Sprintf("%s names no model_type or architectures (is it null or {}?): restore it from the model's repository", cfg.Path)}
	}
	var bad []string
	for _, d := range []struct {
		key string
		v   int
	}{
		{"hidden_size", t.HiddenSize}, {"num_hidden_layers", t.NumHiddenLayers}, {"num_attention_heads", t.NumAttentionHeads},
		{"intermediate_size", t.IntermediateSize}, {"vocab_size", t.VocabSize},
	} {
		if d.v <= 0 {
			bad = append(bad, fmt.Sprintf("%s %d", d.key, d.v))
		}
	}
	if len(bad) > 0 {
		return []string{fmt.Sprintf("%s: %s: every model dimension must be positive (restore the file from the model's repository)", cfg.Path, strings.Join(bad, ", "))}
	}
	if kv := t.KVHeads(); kv <= 0 || t.NumAttentionHeads%kv != 0 {
		return []string{fmt.Sprintf("%s: num_attention_heads %d is not a multiple of num_key_value_heads %d", cfg.Path, t.NumAttentionHeads, kv)}
	}
	if t.HeadDimension() <= 0 {
		return []string{fmt.Sprintf("%s: head_dim is %d (hidden_size %d / num_attention_heads %d): set head_dim or fix the sizes", cfg.Path, t.HeadDimension(), t.HiddenSize, t.NumAttentionHeads)}
	}
	return nil
}

// checkTensors reports the tensors the config implies and the checkpoint
// lacks: a layer with no tensors at all, and for decoderFamilies a missing
// projection (or, with norms, a norm: targets whose steps do not inject
// them; ax650's layernorm step does), or one whose shape disagrees with the
// config.
func checkTensors(ck *safetensors.Checkpoint, cfg *hfconfig.Config, norms bool) []string {
	t := cfg.Text()
	var names []string
	for _, x := range ck.Tensors() {
		names = append(names, x.Name)
	}
	lay, err := hflayout.Detect(names)
	if err != nil { // no known root: every layer is reported missing below
		lay = hflayout.WithPrefix(hflayout.Prefixes()[0])
	}
	layers := map[int]bool{}
	for _, n := range names {
		if i, _, ok := lay.LayerOf(n); ok {
			layers[i] = true
		}
	}
	var empty []string
	for i := range t.NumHiddenLayers {
		if !layers[i] {
			empty = append(empty, strconv.Itoa(i))
		}
	}
	if len(empty) > 0 {
		return []string{fmt.Sprintf("%s: config.json declares %d layers but the checkpoint has no tensors for layer %s (a shard is missing or num_hidden_layers is wrong)",
			ck.Dir, t.NumHiddenLayers, shortList(empty))}
	}
	mt := strings.ToLower(t.ModelType)
	if mt == "" {
		mt = strings.ToLower(cfg.ModelType)
	}
	if !decoderFamilies[mt] {
		return nil
	}
	hd := int64(t.HeadDimension())
	h, ffn, q, kv := int64(t.HiddenSize), int64(t.IntermediateSize), int64(t.NumAttentionHeads)*hd, int64(t.KVHeads())*hd
	shapes := map[hflayout.Kind][2]int64{
		hflayout.Q: {q, h}, hflayout.K: {kv, h}, hflayout.V: {kv, h},
		hflayout.O: {h, q}, hflayout.Gate: {ffn, h}, hflayout.Up: {ffn, h}, hflayout.Down: {h, ffn},
	}
	var missing, wrong []string
	for i := range t.NumHiddenLayers {
		for _, p := range decoderProjections {
			name := lay.LayerName(i, p)
			f, x, ok := ck.Lookup(name)
			if !ok {
				missing = append(missing, name)
				continue
			}
			// Packed ternary checkpoints store integer weights in their own
			// layout; only float shapes are comparable with the config.
			want := shapes[p]
			if x.DType.IsFloat() && (len(x.Shape) != 2 || x.Shape[0] != want[0] || x.Shape[1] != want[1]) {
				wrong = append(wrong, fmt.Sprintf("%s: %s is %v, config.json implies %v", f.Path, name, x.Shape, want[:]))
			}
		}
	}
	if norms {
		have := map[string]bool{}
		for _, n := range names {
			have[n] = true
		}
		if exp, err := patch.ExpectedNorms(cfg, lay.Prefix); err == nil {
			for _, n := range patch.Missing(exp, have) {
				missing = append(missing, n.Name)
			}
		}
	}
	var probs []string
	if len(missing) > 0 {
		probs = append(probs, fmt.Sprintf("%s: %d tensors the %s config implies are missing: %s (pull the complete checkpoint; for norms only, edgectl patch layernorm adds them)",
			ck.Dir, len(missing), mt, shortList(missing)))
	}
	if len(wrong) > 0 {
		probs = append(probs, fmt.Sprintf("%d tensors disagree with config.json: %s", len(wrong), shortList(wrong)))
	}
	return probs
}

// checkTokenizer reads tokenizer.json when there is one: it must parse,
// hold tokens, and every id must fit the model's vocabulary. A missing
// tokenizer is a warning: the weights still load, generation needs one.
func checkTokenizer(dir string, vocab int) (probs, warns []string) {
	path := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, []string{"no tokenizer.json: the CPU engine and serve need one to generate text"}
	}
	tok, err := tokjson.Load(path)
	if err != nil {
		return []string{err.Error()}, nil // tokjson's errors say where and how to fix
	}
	if len(tok.Model.Vocab)+len(tok.AddedTokens) == 0 {
		return []string{fmt.Sprintf("%s has no tokens (empty model.vocab, no added_tokens): restore it from the model's repository", path)}, nil
	}
	// The extreme ids decide; a tokenizer whose ids leave the embedding
	// makes every lookup past it fail (or read out of bounds).
	lo, hi := 0, 0
	var loTok, hiTok string
	see := func(tokStr string, id int) {
		if id < lo || (id == lo && tokStr < loTok) {
			lo, loTok = id, tokStr
		}
		if id > hi || (id == hi && tokStr < hiTok) {
			hi, hiTok = id, tokStr
		}
	}
	for s, id := range tok.Model.Vocab {
		see(s, id)
	}
	for _, a := range tok.AddedTokens {
		see(a.Content, a.ID)
	}
	if lo < 0 {
		return []string{fmt.Sprintf("%s: token %q has the negative id %d", path, loTok, lo)}, nil
	}
	if hi >= vocab {
		return []string{fmt.Sprintf("%s: token %q has id %d, outside the model's vocabulary of %d (config.json vocab_size)", path, hiTok, hi, vocab)}, nil
	}
	return nil, nil
}

// shortList shows the first few entries of a long list.
func shortList(s []string) string {
	const show = 4
	if len(s) <= show {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:show], ", ") + fmt.Sprintf(" and %d more", len(s)-show)
}
