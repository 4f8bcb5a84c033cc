// Package patch repairs Hugging Face checkpoints for vendor NPU toolchains:
// config.json fixes (eos_token_id arrays, KV-cache lengths) and missing
// LayerNorm tensors injected into safetensors shards.
package patch

import (
	"fmt"

	"github.com/edgectl/edgectl/format/hfconfig"
)

// The KV-cache length rule lives here alone: its default, where a length
// comes from, its form and its rounding. Every command that takes
// --kv-cache-len (prep, doctor, patch config, pulsar2 build) decides the
// length with NewKVLen and asks the KVLen; what it does with a length not
// of the form (round it, refuse it, report it) is that command's policy.
// The device side never needs it: it reads the compiled length back from
// the ax-llm directory as a plain number.

// DefaultKVLen is the length used when neither --kv-cache-len nor
// config.json names one: what AXERA builds its current models with
// (axera.md §4).
const DefaultKVLen = 2047

// MinKVLen is the shortest length the runtime holds: one 128-token tile.
const MinKVLen = 127

// KVLenFlag is the flag every command takes the length by.
const KVLenFlag = "--kv-cache-len"

// KVLen is a KV-cache length as a command decided it: the number asked
// and where it came from. The Axera runtime's attention mask has
// kv_cache_len+1 slots, the last for the current token, so the compiled
// length must leave one slot free inside a 128-aligned tile: 128·k−1.
type KVLen struct {
	Asked int    // the length as given, not yet checked
	From  string // KVLenFlag, "PATH kv_cache_len" or "default"
}

// NewKVLen is the one constructor: flag (0 when --kv-cache-len was not
// given), else config.json's kv_cache_len (cfg may be nil: a command that
// records the length itself, as prep does, does not read it), else
// DefaultKVLen.
func NewKVLen(flag int, cfg *hfconfig.Config) KVLen {
	switch {
	case flag != 0:
		return KVLen{Asked: flag, From: KVLenFlag}
	case cfg != nil && cfg.KVCacheLen > 0:
		return KVLen{Asked: cfg.KVCacheLen, From: cfg.Path + " kv_cache_len"}
	}
	return KVLen{Asked: DefaultKVLen, From: "default"}
}

// Defaulted reports that neither the flag nor config.json named a length.
func (k KVLen) Defaulted() bool { return k.From == "default" }

// Exact reports whether the length asked already has the form 128·k−1.
func (k KVLen) Exact() bool { return k.Asked >= MinKVLen && (k.Asked+1)%128 == 0 }

// Len is the length the runtime can use: the largest 128·k−1 ≤ Asked
// (2048 → 2047, 1024 → 1023), or MinKVLen below that.
func (k KVLen) Len() int {
	if k.Asked < MinKVLen {
		return MinKVLen
	}
	return (k.Asked+1)/128*128 - 1
}

// Budget treats the length asked as an upper bound (prep): Len, or an
// error for one shorter than the runtime holds, which rounding up would
// silently exceed.
func (k KVLen) Budget() (int, error) {
	if k.Asked < MinKVLen {
		return 0, fmt.Errorf("%s %d: the AX650 runtime needs at least %d", k.From, k.Asked, MinKVLen)
	}
	return k.Len(), nil
}
