package patch

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/format/hfconfig"
)

// ConfigOptions choose the config.json repairs.
type ConfigOptions struct {
	// EOS picks the id that replaces an eos_token_id array (and, when set,
	// a single eos id that differs); nil means the rule in chooseEOS: the
	// chat template's end-of-turn token, else the tokenizer's eos token,
	// else the array's last entry.
	EOS *int
	// KVCacheLen, when > 0, is normalized to 128·k−1 and recorded as
	// kv_cache_len (pulsar2 build reads it).
	KVCacheLen int
}

// Change is one edit to one file.
type Change struct {
	File   string `json:"file"`
	Key    string `json:"key"`
	Old    any    `json:"old"`
	New    any    `json:"new"`
	Reason string `json:"reason"`
	// Rule names the EOS rule that chose New (eos_token_id changes only):
	// RuleFlag, RuleTemplate, RuleTokenizer or RuleLast.
	Rule string `json:"rule,omitempty"`
}

// FileEdit is the new content of one file, with its changes.
type FileEdit struct {
	Name    string // file name inside the checkpoint directory
	Old     []byte
	New     []byte
	Changes []Change
}

// PlanConfig computes the config.json/generation_config.json repairs for the
// checkpoint in dir without writing anything. Files that need no change are
// omitted, so an empty plan means the checkpoint is already fixed
// (the operation is idempotent).
func PlanConfig(dir string, opts ConfigOptions) ([]FileEdit, error) {
	if err := CheckPending(dir); err != nil {
		return nil, err
	}
	cfg, err := hfconfig.Load(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	eos, haveEOS, err := chooseEOS(dir, cfg, opts.EOS)
	if err != nil {
		return nil, err
	}
	var edits []FileEdit
	doc, err := hfconfig.ParseDoc(cfg.Raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", cfg.Path, err)
	}
	var changes []Change
	if haveEOS && eosNeedsEdit(cfg, eos) {
		if err := doc.Set("eos_token_id", eos.ID); err != nil {
			return nil, err
		}
		changes = append(changes, eosChange("config.json", cfg, eos))
	}
	if opts.KVCacheLen > 0 {
		n := NewKVLen(opts.KVCacheLen, nil).Len()
		reason := fmt.Sprintf("%d has the form 128·k−1", n)
		if n != opts.KVCacheLen {
			reason = fmt.Sprintf("%d → %d: the runtime adds one slot for the current token, so lengths are 128·k−1", opts.KVCacheLen, n)
		}
		if cfg.KVCacheLen != n {
			var old any
			if doc.Has("kv_cache_len") {
				old = cfg.KVCacheLen
			}
			if err := doc.Set("kv_cache_len", n); err != nil {
				return nil, err
			}
			changes = append(changes, Change{File: "config.json", Key: "kv_cache_len", Old: old, New: n, Reason: reason})
		}
	}
	if len(changes) > 0 {
		edits = append(edits, FileEdit{Name: "config.json", Old: cfg.Raw, New: doc.Bytes(), Changes: changes})
	}

	genPath := filepath.Join(dir, "generation_config.json")
	if _, err := os.Stat(genPath); err == nil {
		gen, err := hfconfig.Load(genPath)
		if err != nil {
			return nil, err
		}
		if haveEOS && eosNeedsEdit(gen, eos) {
			gd, err := hfconfig.ParseDoc(gen.Raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", genPath, err)
			}
			if err := gd.Set("eos_token_id", eos.ID); err != nil {
				return nil, err
			}
			edits = append(edits, FileEdit{Name: "generation_config.json", Old: gen.Raw, New: gd.Bytes(),
				Changes: []Change{eosChange("generation_config.json", gen, eos)}})
		}
	}
	return edits, nil
}

// eosNeedsEdit: an eos_token_id array always becomes one id. A single id
// is rewritten only when it differs from one chosen with --eos or by the
// chat template (a config that stops on <eos> while turns end with
// <end_of_turn>); the weaker rules never override a single id the model
// author wrote.
func eosNeedsEdit(cfg *hfconfig.Config, eos eosChoice) bool {
	if cfg.EosIsArray {
		return true
	}
	if len(cfg.EosTokenID) != 1 || cfg.EosTokenID[0] == eos.ID {
		return false
	}
	return eos.Rule == RuleFlag || eos.Rule == RuleTemplate
}

func eosChange(file string, cfg *hfconfig.Config, eos eosChoice) Change {
	var old any = cfg.EosTokenID[0]
	if cfg.EosIsArray {
		old = []int(cfg.EosTokenID)
	}
	return Change{File: file, Key: "eos_token_id", Old: old, New: eos.ID, Reason: eos.Why, Rule: eos.Rule}
}
