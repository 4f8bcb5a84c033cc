package patch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/tokjson"
)

// ConfigOptions choose the config.json repairs.
type ConfigOptions struct {
	// EOS picks the id that replaces an eos_token_id array; nil means the
	// tokenizer's eos token, else the array's last entry.
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
	eos, why, err := chooseEOS(dir, cfg, opts.EOS)
	if err != nil {
		return nil, err
	}
	var edits []FileEdit
	doc, err := hfconfig.ParseDoc(cfg.Raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", cfg.Path, err)
	}
	var changes []Change
	if cfg.EosIsArray {
		if err := doc.Set("eos_token_id", eos); err != nil {
			return nil, err
		}
		changes = append(changes, Change{File: "config.json", Key: "eos_token_id", Old: []int(cfg.EosTokenID), New: eos, Reason: why})
	}
	if opts.KVCacheLen > 0 {
		n := KVCacheLen(opts.KVCacheLen)
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
		if gen.EosIsArray {
			gd, err := hfconfig.ParseDoc(gen.Raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", genPath, err)
			}
			if err := gd.Set("eos_token_id", eos); err != nil {
				return nil, err
			}
			edits = append(edits, FileEdit{Name: "generation_config.json", Old: gen.Raw, New: gd.Bytes(),
				Changes: []Change{{File: "generation_config.json", Key: "eos_token_id", Old: []int(gen.EosTokenID), New: eos, Reason: why}}})
		}
	}
	return edits, nil
}

// chooseEOS picks the single eos id: --eos, else the tokenizer's eos token
// when it is one of the listed ids, else the last entry. It returns the id
// and a sentence saying why.
func chooseEOS(dir string, cfg *hfconfig.Config, want *int) (int, string, error) {
	ids := []int(cfg.EosTokenID)
	if gen, err := hfconfig.Load(filepath.Join(dir, "generation_config.json")); err == nil && len(gen.EosTokenID) > len(ids) {
		ids = gen.EosTokenID
	}
	if want != nil {
		if len(ids) > 0 && !slices.Contains(ids, *want) {
			return 0, "", fmt.Errorf("--eos %d is not one of the model's eos ids %v", *want, ids)
		}
		return *want, fmt.Sprintf("chosen with --eos from %v", ids), nil
	}
	if len(ids) == 0 {
		return 0, "", nil
	}
	if tc, err := tokjson.LoadConfig(dir); err == nil && tc.EOSToken != "" {
		if tok, err := tokjson.Load(filepath.Join(dir, "tokenizer.json")); err == nil {
			if id, ok := tok.ID(tc.EOSToken); ok && slices.Contains(ids, id) {
				return id, fmt.Sprintf("the tokenizer's eos_token %q is id %d (of %v)", tc.EOSToken, id, ids), nil
			}
		}
	}
	last := ids[len(ids)-1]
	return last, fmt.Sprintf("last entry of %v (no tokenizer eos_token among them; override with --eos)", ids), nil
}
